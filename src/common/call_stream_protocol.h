// The call stream: a framed protocol for the calls on the hot path (a driver pushing
// tasks to a leased worker, a caller sending actor calls), over a Unix socket on the
// same node and TCP across nodes. gRPC stays for everything else; a call here costs one
// write and one read on each side, where a gRPC call hands the bytes between threads
// several times.
//
//   frame: u32 magic "ORBK" | u8 kind | u8 code | u16 zero | u32 length | u64 call_id
//          | `length` bytes of payload
//
// Integers are little-endian (the host's order: both ends run the same build).
//   kHello    the client's first frame: the payload is the cluster token.
//   kRequest  code = the method; the payload its serialized request.
//   kReply    the payload is the serialized reply of call `call_id`.
//   kError    code = an absl::StatusCode, the payload its message. call_id 0: the
//             connection is refused (wrong token, a malformed frame) and closes.
//   kPing     server to client, every heartbeat interval, from a thread of its own (the
//             thread that reads requests may be running a long task): a client that
//             hears nothing for kDeadAfter while it has calls in flight fails them, as
//             gRPC's keepalive would (a stopped process, a partitioned node).
// A connection carries any number of calls at once; replies may come in any order.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace orb::call_stream {

constexpr uint32_t kMagic = 0x4b42524f;  // "ORBK"
// Larger frames are refused: a caller sends bigger requests over gRPC instead.
constexpr uint32_t kMaxPayloadBytes = 64u << 20;
constexpr uint32_t kMaxTokenBytes = 4096;
// How often a server pings each connection, and how long a client with calls in flight
// waits without hearing anything before it gives the peer up.
constexpr std::chrono::milliseconds kHeartbeatInterval{2000};
constexpr std::chrono::milliseconds kDeadAfter{10000};

enum Kind : uint8_t { kHello = 1, kRequest = 2, kReply = 3, kError = 4, kPing = 5 };
// kRoute: any method of a gRPC service served over the call stream as well
// (common/call_stream_routes.h); its payload is EncodeRoute's.
enum Method : uint8_t { kPushTasks = 1, kRoute = 2 };

#pragma pack(push, 1)
struct FrameHeader {
  uint32_t magic;
  uint8_t kind;
  uint8_t code;
  uint16_t zero;
  uint32_t length;
  uint64_t call_id;
};
#pragma pack(pop)
static_assert(sizeof(FrameHeader) == 20);

// The bytes of a whole frame.
std::string EncodeFrame(Kind kind, uint8_t code, uint64_t call_id, std::string_view payload);

// Reads frames out of a byte stream as it arrives.
class FrameReader {
 public:
  struct Frame {
    Kind kind;
    uint8_t code;
    uint64_t call_id;
    std::string_view payload;  // valid until the next Reserve
  };
  enum class Result { kFrame, kNeedMore, kMalformed };

  // Room for at least `min` more bytes, to receive into; then Commit what came.
  char* Reserve(size_t min, size_t* room);
  void Commit(size_t bytes) { end_ += bytes; }
  // The next whole frame; kMalformed sets `why` (the stream is then unusable).
  Result Next(Frame* frame, std::string* why);
  // Bytes of a frame begun but not whole.
  size_t partial_bytes() const { return end_ - begin_; }

 private:
  std::string buffer_;
  size_t begin_ = 0;  // the first unread byte
  size_t end_ = 0;    // one past the last received byte
};

// The payload of a kRoute request: u16 path length | the gRPC method's path
// ("/orb.rpc.GcsService/KvGet") | the serialized request.
std::string EncodeRoute(std::string_view path, std::string_view request);
// False when `payload` is too short for the path it declares.
bool DecodeRoute(std::string_view payload, std::string_view* path, std::string_view* request);

// An error frame's status.
absl::Status ErrorFromFrame(uint8_t code, std::string_view message);

}  // namespace orb::call_stream
