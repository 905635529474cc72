// The raylet-to-raylet object stream: a TCP connection on which a puller asks for byte
// ranges of sealed objects and their holder sends them straight from its arena — one
// copy into the socket on one side, one out of it into the arena on the other, where
// gRPC's messages cost several.
//
//   request:  u32 magic "ORBS" | u32 version (1) | u32 token length | 20-byte object id
//             | u64 offset | u64 length | the cluster token
//   response: u32 status | u64 length | `length` bytes when the status is kOk
//
// Integers are little-endian. A connection carries any number of requests, one at a
// time. A request that is malformed or lacks the cluster token is answered with its
// status and the connection is closed, as is one the holder is too busy for (kBusy).
// The first request must arrive within a short deadline of the connection.
#pragma once

#include <cstddef>
#include <cstdint>

namespace orb::object_stream {

constexpr uint32_t kMagic = 0x5342524f;  // "ORBS"
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxTokenBytes = 4096;
constexpr size_t kObjectIdBytes = 20;

enum Status : uint32_t {
  kOk = 0,
  kNotFound = 1,         // the holder does not have the object (any more)
  kOutOfRange = 2,       // the range is not inside the object
  kUnauthenticated = 3,  // missing or wrong cluster token
  kMalformed = 4,        // not a request of this protocol and version
  kBusy = 5,             // every connection for members is in use: try again shortly
  kNoRoom = 6,           // the holder has it on disk but no room to read it back now
};

#pragma pack(push, 1)
struct RequestHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t token_bytes;
  char object_id[kObjectIdBytes];
  uint64_t offset;
  uint64_t length;
};
struct ResponseHeader {
  uint32_t status;
  uint64_t length;
};
#pragma pack(pop)

// Sets the timeouts that bound every blocking call on `fd`, and TCP_NODELAY.
void ConfigureSocket(int fd, int timeout_seconds);

}  // namespace orb::object_stream
