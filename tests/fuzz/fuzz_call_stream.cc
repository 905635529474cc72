// Fuzzes both ends of the call stream (src/common/call_stream_*) over real Unix sockets:
//   - what a stranger or a broken peer sends to a worker's CallStreamServer, which must
//     answer with well-formed frames (or close), never crash or hang its polling thread;
//   - what a peer answers to a caller's CallStreamClient, whose call must end exactly
//     once, with a reply or a status, whatever the bytes.
//
// Input: one byte choosing the end, then the bytes that end receives.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/call_stream_client.h"
#include "common/call_stream_protocol.h"
#include "common/call_stream_server.h"
#include "common/sockets.h"
#include "fuzz_input.h"

using namespace orb;
namespace cs = orb::call_stream;

namespace {

const std::string kToken = "fuzz-token";

std::string SocketPath(const char* name) {
  return (std::filesystem::temp_directory_path() / ("orb-fuzz-" + std::to_string(::getpid()) + "-" + name)).string();
}

// A worker's end: an echo handler, polled by its own thread as a task loop would.
struct Worker {
  std::unique_ptr<CallStreamServer> server;
  std::thread poller;

  Worker() {
    CallStreamServer::Options options;
    options.token = kToken;
    options.unix_path = SocketPath("server");
    options.heartbeat_interval = std::chrono::milliseconds(0);
    auto started = CallStreamServer::Start(options, [](uint8_t method, std::string_view payload,
                                                       CallStreamServer::Responder responder) {
      if (method == cs::kPushTasks) return responder.Reply(payload);
      responder.Fail(absl::UnimplementedError("no such method"));
    });
    if (!started.ok()) std::abort();
    server = std::move(*started);
    poller = std::thread([s = server.get()] {
      while (true) s->PollOnce(-1);
    });
  }
};

int BlockingConnect(const std::string& endpoint) {
  auto fd = ConnectNonBlocking(endpoint);
  if (!fd.ok()) std::abort();
  ::fcntl(*fd, F_SETFL, ::fcntl(*fd, F_GETFL) & ~O_NONBLOCK);
  timeval timeout{5, 0};
  ::setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(*fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  return *fd;
}

// Sends `bytes` to the worker as one peer would, then reads every answer to the end:
// each must be a well-formed frame.
void ToServer(Worker& worker, const uint8_t* bytes, size_t size) {
  int fd = BlockingConnect("unix:" + worker.server->unix_path());
  (void)WriteAll(fd, bytes, size);
  ::shutdown(fd, SHUT_WR);
  cs::FrameReader reader;
  while (true) {
    size_t room = 0;
    char* into = reader.Reserve(65536, &room);
    ssize_t n = ::recv(fd, into, room, 0);
    if (n < 0 && errno == EINTR) continue;  // libFuzzer's alarm
    if (n < 0) {
      fprintf(stderr, "the server neither answered nor closed within 5 s\n");
      std::abort();
    }
    if (n == 0) break;
    reader.Commit(static_cast<size_t>(n));
    cs::FrameReader::Frame frame;
    std::string why;
    cs::FrameReader::Result result;
    while ((result = reader.Next(&frame, &why)) == cs::FrameReader::Result::kFrame) {
    }
    if (result == cs::FrameReader::Result::kMalformed) {
      fprintf(stderr, "the server sent a malformed frame: %s\n", why.c_str());
      std::abort();
    }
  }
  if (reader.partial_bytes() != 0) std::abort();  // a frame cut short by the server
  ::close(fd);
}

// A peer that answers the client's call with `bytes`, then closes.
void ToClient(const uint8_t* bytes, size_t size) {
  static std::string path = SocketPath("peer");
  static int listener = [] {
    auto l = ListenUnix(path, "fuzz peer");
    if (!l.ok()) std::abort();
    return l->fd;
  }();
  std::promise<absl::Status> done;
  std::atomic<int> calls{0};
  {
    CallStreamClient client("unix:" + path, kToken);
    client.Call(cs::kPushTasks, "request", [&](const absl::Status& status, std::string_view) {
      if (calls++ == 0) done.set_value(status);
    });
    pollfd pfd{listener, POLLIN, 0};
    int ready;
    while ((ready = ::poll(&pfd, 1, 5000)) < 0 && errno == EINTR) {
    }
    int fd = ready == 1 ? ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC) : -1;
    if (fd >= 0) {
      (void)WriteAll(fd, bytes, size);
      ::shutdown(fd, SHUT_WR);
    }
    auto finished = done.get_future();
    if (finished.wait_for(std::chrono::seconds(8)) != std::future_status::ready) {
      fprintf(stderr, "the call did not end after its peer closed (peer accepted: %s)\n", fd >= 0 ? "yes" : "no");
      std::abort();
    }
    if (fd >= 0) ::close(fd);
  }
  if (calls != 1) std::abort();  // a call ends exactly once
}

std::string Frame(cs::Kind kind, uint8_t code, uint64_t id, const std::string& payload) {
  return cs::EncodeFrame(kind, code, id, payload);
}

std::vector<std::string> Seeds() {
  std::string hello = Frame(cs::kHello, 0, 0, kToken);
  return {
      '\0' + hello + Frame(cs::kRequest, cs::kPushTasks, 1, "abc"),
      '\0' + hello + Frame(cs::kRequest, cs::kPushTasks, 1, "a") + Frame(cs::kRequest, 9, 2, "b"),
      '\0' + Frame(cs::kHello, 0, 0, "wrong"),
      '\0' + Frame(cs::kRequest, cs::kPushTasks, 1, "no hello"),
      '\0' + hello + Frame(cs::kPing, 0, 0, ""),
      '\1' + Frame(cs::kReply, 0, 1, "reply"),
      '\1' + Frame(cs::kPing, 0, 0, "") + Frame(cs::kReply, 0, 1, "reply"),
      '\1' + Frame(cs::kError, 14, 1, "unavailable"),
      '\1' + Frame(cs::kError, 16, 0, "wrong cluster token"),
      '\1' + Frame(cs::kReply, 0, 7, "not ours"),
  };
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) { return orb::fuzz::WriteSeedsIfAsked(Seeds); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Worker* worker = new Worker();
  if (size < 1) return 0;
  if (data[0] % 2 == 0) {
    ToServer(*worker, data + 1, size - 1);
  } else {
    ToClient(data + 1, size - 1);
  }
  return 0;
}
