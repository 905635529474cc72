// Fuzzes both ends of the object stream (src/raylet/object_manager/object_stream_*)
// over real loopback sockets:
//   - what a stranger or a broken peer sends to a holder's ObjectStreamServer, which
//     must answer with a status or close, never crash, read out of bounds or send bytes
//     outside the object it pinned;
//   - what a holder answers to a puller's ObjectStreamClient, which must end the fetch
//     with a status and never write outside the destination it was given.
//
// Input: one byte choosing the end, then the bytes that end receives.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fuzz_input.h"
#include "common/sockets.h"
#include "raylet/object_manager/object_stream_client.h"
#include "raylet/object_manager/object_stream_protocol.h"
#include "raylet/object_manager/object_stream_server.h"

using namespace orb;
namespace os = orb::object_stream;

namespace {

const std::string kToken = "fuzz-token";
constexpr uint64_t kObjectBytes = 4096;

// One sealed object in a small arena, pinned and unpinned as a raylet would.
struct Holder {
  std::vector<uint8_t> arena = std::vector<uint8_t>(3 * kObjectBytes, 0xab);
  ObjectID id = ObjectID::FromBinary(std::string(os::kObjectIdBytes, '\x07'));
  std::atomic<int> pins{0};
  std::unique_ptr<ObjectStreamServer> server;

  Holder() {
    ObjectStreamSource source;
    source.arena = arena.data();
    source.pin = [this](const ObjectID& which, const WorkerID&) {
      if (which != id) return ObjectLocationInArena{};
      ++pins;
      return ObjectLocationInArena{true, kObjectBytes, kObjectBytes};
    };
    source.unpin = [this](const ObjectID&, const WorkerID&) { --pins; };
    auto started = ObjectStreamServer::Start("127.0.0.1", 0, kToken, source);
    if (!started.ok()) std::abort();
    server = std::move(*started);
  }
};

// Closes with a reset rather than a FIN: hundreds of thousands of connections a run
// would otherwise leave as many in TIME_WAIT and use up the ephemeral ports.
void CloseAbruptly(int fd) {
  linger abrupt{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abrupt, sizeof(abrupt));
  ::close(fd);
}

int Connect(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      os::ConfigureSocket(fd, 5);
      return fd;
    }
    int error = errno;
    ::close(fd);
    if (error != EADDRNOTAVAIL && error != EAGAIN && error != EINTR) {
      fprintf(stderr, "cannot connect to the holder: %s\n", strerror(error));
      std::abort();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // a signal, or ports in TIME_WAIT: soon free
  }
  fprintf(stderr, "cannot connect to the holder: no local port free\n");
  std::abort();
}

// Sends `bytes` to the holder as one peer would, then reads every answer to the end.
void ToServer(Holder& holder, const uint8_t* bytes, size_t size) {
  int fd = Connect(holder.server->port());
  (void)orb::WriteAll(fd, bytes, size);
  ::shutdown(fd, SHUT_WR);
  char sink[65536];
  while (::read(fd, sink, sizeof(sink)) > 0) {
  }
  CloseAbruptly(fd);
  // The holder closed the connection: every pin its requests took is released.
  if (holder.pins != 0) std::abort();
}

// A listening socket for ToClient, the same for every input.
int Listener(int* port) {
  static int listener = -1;
  static int bound_port = 0;
  if (listener < 0) {
    listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listener, 64) != 0 ||
        ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      std::abort();
    }
    bound_port = ntohs(addr.sin_port);
  }
  *port = bound_port;
  return listener;
}

// A holder that answers the client's first request with `bytes`.
void ToClient(const uint8_t* bytes, size_t size) {
  int port = 0;
  int listener = Listener(&port);
  const uint64_t length = 1000;
  // Guard bytes on both sides of the destination: the client must write only inside.
  std::vector<uint8_t> dest(length + 128, 0x5a);
  std::promise<absl::Status> done;
  {
    ObjectStreamClient client(kToken, 1);
    client.Fetch("127.0.0.1:" + std::to_string(port), ObjectID::FromBinary(std::string(20, '\x01')), 0, length,
                 dest.data() + 64, [&done](absl::Status s) { done.set_value(std::move(s)); });
    pollfd pfd{listener, POLLIN, 0};
    int ready;
    while ((ready = ::poll(&pfd, 1, 5000)) < 0 && errno == EINTR) {  // libFuzzer's alarm
    }
    int fd = ready == 1 ? ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC) : -1;
    if (fd >= 0) {
      os::ConfigureSocket(fd, 5);
      os::RequestHeader request;
      std::string token(kToken.size(), '\0');
      if (orb::ReadAll(fd, &request, sizeof(request)) && orb::ReadAll(fd, token.data(), token.size())) {
        (void)orb::WriteAll(fd, bytes, size);
      }
      ::shutdown(fd, SHUT_WR);  // the answer ends here
    }
    auto finished = done.get_future();
    if (finished.wait_for(std::chrono::seconds(8)) != std::future_status::ready) {
      fprintf(stderr, "the fetch did not end after its answer was cut off (holder accepted: %s)\n",
              fd >= 0 ? "yes" : "no");
      std::abort();
    }
    absl::Status status = finished.get();
    if (fd >= 0) CloseAbruptly(fd);  // the client has read what it wanted
    if (status.ok() && size < sizeof(os::ResponseHeader) + length) std::abort();  // done without the bytes
  }
  for (int i = 0; i < 64; ++i) {
    if (dest[i] != 0x5a || dest[64 + length + i] != 0x5a) std::abort();  // wrote outside the destination
  }
}

std::string Request(uint64_t offset, uint64_t length, const std::string& token, uint32_t magic = os::kMagic) {
  os::RequestHeader h{};
  h.magic = magic;
  h.version = os::kVersion;
  h.token_bytes = static_cast<uint32_t>(token.size());
  std::memset(h.object_id, 7, sizeof(h.object_id));
  h.offset = offset;
  h.length = length;
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h)) + token;
}

std::string Response(uint32_t status, uint64_t length, const std::string& body) {
  os::ResponseHeader h{status, length};
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h)) + body;
}

// Well-formed traffic both ways.
std::vector<std::string> Seeds() {
  return {
      '\0' + Request(0, 100, kToken),
      '\0' + Request(0, 100, kToken) + Request(4000, 96, kToken),
      '\0' + Request(4000, 200, kToken),
      '\0' + Request(0, 10, "wrong"),
      '\0' + Request(0, 10, kToken, 0x12345678),
      '\1' + Response(os::kOk, 1000, std::string(1000, 'x')),
      '\1' + Response(os::kNotFound, 0, ""),
      '\1' + Response(os::kBusy, 0, ""),
      '\1' + Response(os::kOk, 999, std::string(999, 'x')),
  };
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) { return orb::fuzz::WriteSeedsIfAsked(Seeds); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Holder* holder = new Holder();
  if (size < 1) return 0;
  if (data[0] % 2 == 0) {
    ToServer(*holder, data + 1, size - 1);
  } else {
    ToClient(data + 1, size - 1);
  }
  return 0;
}
