// The call stream (common/call_stream_*.h): calls over a Unix socket and TCP, and what a
// client sees when the peer refuses it, sends garbage, or goes away mid-call.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/call_stream_client.h"
#include "common/call_stream_protocol.h"
#include "common/call_stream_server.h"
#include "common/sockets.h"

using namespace orb;
namespace cs = orb::call_stream;

namespace {

constexpr uint8_t kEcho = 1;  // replies "echo:" + the request
constexpr uint8_t kHold = 2;  // never replies
constexpr uint8_t kBusy = 3;  // keeps the polling thread for the request's milliseconds, then replies

// A server on a Unix socket and TCP, polled by its own thread (as a worker's task loop does).
class TestServer {
 public:
  explicit TestServer(std::chrono::milliseconds heartbeat = cs::kHeartbeatInterval,
                      std::chrono::milliseconds hello_timeout = std::chrono::milliseconds(5000)) {
    dir_ = std::filesystem::temp_directory_path() / ("call_stream_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    CallStreamServer::Options options;
    options.token = "secret";
    options.unix_path = (dir_ / ("s" + std::to_string(next_++))).string();
    options.tcp_ip = "127.0.0.1";
    options.heartbeat_interval = heartbeat;
    options.hello_timeout = hello_timeout;
    options.max_unauthenticated = 4;
    auto started = CallStreamServer::Start(options, [this](uint8_t method, std::string_view payload,
                                                           CallStreamServer::Responder responder) {
      if (method == kEcho) return responder.Reply("echo:" + std::string(payload));
      if (method == kBusy) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(std::string(payload))));
        return responder.Reply("done");
      }
      if (method == kHold) {
        std::lock_guard<std::mutex> lock(mu_);
        held_.push_back(std::move(responder));
        return;
      }
      responder.Fail(absl::UnimplementedError("no method " + std::to_string(method)));
    });
    REQUIRE(started.ok());
    server_ = std::move(*started);
    thread_ = std::thread([this] {
      while (!stop_) server_->PollOnce(-1);
    });
  }
  ~TestServer() { Stop(); }
  // The server goes away as a dying process's would: every socket closes.
  void Stop() {
    if (!thread_.joinable()) return;
    stop_ = true;
    server_->Wake();
    thread_.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_.clear();
    }
    server_.reset();
  }
  std::string unix_endpoint() const { return "unix:" + server_->unix_path(); }
  std::string tcp_endpoint() const { return "127.0.0.1:" + std::to_string(server_->port()); }
  size_t held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }

 private:
  static inline int next_ = 0;
  std::filesystem::path dir_;
  std::unique_ptr<CallStreamServer> server_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<CallStreamServer::Responder> held_;
};

struct Outcome {
  absl::Status status;
  std::string reply;
};

Outcome CallAndWait(CallStreamClient& client, uint8_t method, const std::string& request) {
  std::promise<Outcome> promise;
  client.Call(method, request, [&](const absl::Status& status, std::string_view reply) {
    promise.set_value(Outcome{status, std::string(reply)});
  });
  auto future = promise.get_future();
  REQUIRE(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  return future.get();
}

// A raw connection to the server, to send what a well-behaved client never would.
int RawConnect(const std::string& endpoint) {
  auto fd = ConnectNonBlocking(endpoint);
  REQUIRE(fd.ok());
  // Back to blocking for the test's simple reads and writes.
  int flags = ::fcntl(*fd, F_GETFL);
  ::fcntl(*fd, F_SETFL, flags & ~O_NONBLOCK);
  timeval timeout{10, 0};
  ::setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return *fd;
}

// Reads the server's answer to a raw connection: one frame, then the end of the stream.
cs::FrameReader::Frame ReadFrameThenEof(int fd, cs::FrameReader& reader, bool* closed) {
  cs::FrameReader::Frame frame{};
  std::string why;
  while (reader.Next(&frame, &why) != cs::FrameReader::Result::kFrame) {
    size_t room = 0;
    char* into = reader.Reserve(4096, &room);
    ssize_t n = ::recv(fd, into, room, 0);
    REQUIRE(n > 0);
    reader.Commit(static_cast<size_t>(n));
  }
  char byte;
  *closed = ::recv(fd, &byte, 1, 0) == 0;
  return frame;
}

}  // namespace

TEST_CASE("frames are read whole however the bytes arrive", "[call_stream]") {
  std::string stream = cs::EncodeFrame(cs::kRequest, kEcho, 7, "hello") + cs::EncodeFrame(cs::kReply, 0, 8, "") +
                       cs::EncodeFrame(cs::kError, 5, 9, "gone");
  for (size_t chunk : {1, 3, 20, 1000}) {
    cs::FrameReader reader;
    std::vector<std::string> payloads;
    std::vector<uint64_t> ids;
    for (size_t at = 0; at < stream.size(); at += chunk) {
      size_t n = std::min(chunk, stream.size() - at);
      size_t room = 0;
      std::memcpy(reader.Reserve(n, &room), stream.data() + at, n);
      reader.Commit(n);
      cs::FrameReader::Frame frame;
      std::string why;
      while (reader.Next(&frame, &why) == cs::FrameReader::Result::kFrame) {
        payloads.emplace_back(frame.payload);
        ids.push_back(frame.call_id);
      }
    }
    CHECK(payloads == std::vector<std::string>{"hello", "", "gone"});
    CHECK(ids == std::vector<uint64_t>{7, 8, 9});
    CHECK(reader.partial_bytes() == 0);
  }
}

TEST_CASE("calls round trip over a Unix socket and over TCP, many at once", "[call_stream]") {
  TestServer server;
  for (const std::string& endpoint : {server.unix_endpoint(), server.tcp_endpoint()}) {
    CallStreamClient client(endpoint, "secret");
    CHECK(CallAndWait(client, kEcho, "one").reply == "echo:one");
    constexpr int kCalls = 2000;
    std::mutex mu;
    std::vector<std::string> replies(kCalls);
    std::atomic<int> done{0};
    std::string big(1 << 20, 'x');  // larger than a socket's buffer: written in parts
    for (int i = 0; i < kCalls; ++i) {
      std::string request = i == kCalls / 2 ? big : std::to_string(i);
      client.Call(kEcho, request, [&, i](const absl::Status& status, std::string_view reply) {
        std::lock_guard<std::mutex> lock(mu);
        replies[i] = status.ok() ? std::string(reply) : status.ToString();
        done++;
      });
    }
    for (int waited = 0; done < kCalls && waited < 1000; ++waited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(done == kCalls);
    for (int i = 0; i < kCalls; ++i) {
      CHECK(replies[i] == "echo:" + (i == kCalls / 2 ? big : std::to_string(i)));
    }
    CHECK(client.WaitIdle(std::chrono::milliseconds(0)));
  }
}

TEST_CASE("a server's error for one call reaches that call only", "[call_stream]") {
  TestServer server;
  CallStreamClient client(server.unix_endpoint(), "secret");
  Outcome failed = CallAndWait(client, 99, "x");
  CHECK(failed.status.code() == absl::StatusCode::kUnimplemented);
  CHECK(std::string(failed.status.message()) == "no method 99");
  CHECK(CallAndWait(client, kEcho, "after").reply == "echo:after");
}

TEST_CASE("a wrong token is refused with UNAUTHENTICATED, and the server goes on serving", "[call_stream]") {
  TestServer server;
  CallStreamClient intruder(server.tcp_endpoint(), "guess");
  Outcome refused = CallAndWait(intruder, kEcho, "let me in");
  CHECK(refused.status.code() == absl::StatusCode::kUnauthenticated);
  CHECK_THAT(std::string(refused.status.message()), Catch::Contains("wrong cluster token"));
  CHECK_THAT(std::string(refused.status.message()), Catch::Contains(server.tcp_endpoint()));
  CallStreamClient member(server.tcp_endpoint(), "secret");
  CHECK(CallAndWait(member, kEcho, "hi").reply == "echo:hi");
}

TEST_CASE("a request before the token is refused", "[call_stream]") {
  TestServer server;
  int fd = RawConnect(server.unix_endpoint());
  std::string frame = cs::EncodeFrame(cs::kRequest, kEcho, 1, "no hello");
  REQUIRE(WriteAll(fd, frame.data(), frame.size()));
  cs::FrameReader reader;
  bool closed = false;
  auto answer = ReadFrameThenEof(fd, reader, &closed);
  CHECK(answer.kind == cs::kError);
  CHECK(answer.code == static_cast<uint8_t>(absl::StatusCode::kUnauthenticated));
  CHECK(std::string(answer.payload) == "the first frame must present the cluster token");
  CHECK(closed);
  ::close(fd);
}

TEST_CASE("a malformed frame is answered with an error naming it and the connection closed", "[call_stream]") {
  TestServer server;
  struct Case {
    std::string bytes;
    std::string expect;
  };
  cs::FrameHeader oversized{cs::kMagic, cs::kRequest, kEcho, 0, cs::kMaxPayloadBytes + 1, 1};
  cs::FrameHeader unknown_kind{cs::kMagic, 42, 0, 0, 0, 1};
  std::string hello = cs::EncodeFrame(cs::kHello, 0, 0, "secret");
  std::vector<Case> cases = {
      {std::string(32, 'G'), "bad magic"},
      {hello + std::string(reinterpret_cast<char*>(&oversized), sizeof(oversized)), "over the limit"},
      {hello + std::string(reinterpret_cast<char*>(&unknown_kind), sizeof(unknown_kind)), "unknown frame kind 42"},
      {hello + cs::EncodeFrame(cs::kReply, 0, 1, ""), "only requests"},
  };
  for (const auto& c : cases) {
    int fd = RawConnect(server.unix_endpoint());
    REQUIRE(WriteAll(fd, c.bytes.data(), c.bytes.size()));
    cs::FrameReader reader;
    bool closed = false;
    auto answer = ReadFrameThenEof(fd, reader, &closed);
    CHECK(answer.kind == cs::kError);
    CHECK(answer.code == static_cast<uint8_t>(absl::StatusCode::kInvalidArgument));
    CHECK_THAT(std::string(answer.payload), Catch::Contains(c.expect));
    CHECK(closed);
    ::close(fd);
  }
  CallStreamClient client(server.unix_endpoint(), "secret");
  CHECK(CallAndWait(client, kEcho, "still here").reply == "echo:still here");
}

TEST_CASE("a client that closes mid-frame is dropped and the server goes on serving", "[call_stream]") {
  TestServer server;
  int fd = RawConnect(server.tcp_endpoint());
  std::string bytes = cs::EncodeFrame(cs::kHello, 0, 0, "secret") + cs::EncodeFrame(cs::kRequest, kEcho, 1, "truncated");
  REQUIRE(WriteAll(fd, bytes.data(), bytes.size() - 4));  // the last 4 bytes never come
  ::close(fd);
  CallStreamClient client(server.tcp_endpoint(), "secret");
  CHECK(CallAndWait(client, kEcho, "next").reply == "echo:next");
}

TEST_CASE("a server that dies mid-call fails the calls in flight with UNAVAILABLE", "[call_stream]") {
  auto server = std::make_unique<TestServer>();
  std::string endpoint = server->unix_endpoint();
  CallStreamClient client(endpoint, "secret");
  CHECK(CallAndWait(client, kEcho, "warm").reply == "echo:warm");
  std::promise<absl::Status> first, second;
  client.Call(kHold, "a", [&](const absl::Status& s, std::string_view) { first.set_value(s); });
  client.Call(kHold, "b", [&](const absl::Status& s, std::string_view) { second.set_value(s); });
  for (int i = 0; i < 500 && server->held() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(server->held() == 2);
  server->Stop();  // every socket of the server closes, as when its process is killed
  for (auto* promise : {&first, &second}) {
    auto future = promise->get_future();
    REQUIRE(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    absl::Status status = future.get();
    CHECK(status.code() == absl::StatusCode::kUnavailable);
    CHECK_THAT(std::string(status.message()), Catch::Contains(endpoint));
    CHECK_THAT(std::string(status.message()), Catch::Contains("2 call(s) in flight"));
  }
  // Later calls fail at once: nothing listens there any more.
  Outcome after = CallAndWait(client, kEcho, "anyone?");
  CHECK(after.status.code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(after.status.message()), Catch::Contains("cannot connect"));
}

TEST_CASE("a client reconnects after its connection broke", "[call_stream]") {
  TestServer server;
  CallStreamClient client(server.unix_endpoint(), "secret");
  CHECK(CallAndWait(client, kEcho, "1").reply == "echo:1");
  client.CancelAll();  // closes the connection
  CHECK(CallAndWait(client, kEcho, "2").reply == "echo:2");
}

TEST_CASE("cancelling fails the calls in flight with CANCELLED", "[call_stream]") {
  TestServer server;
  CallStreamClient client(server.unix_endpoint(), "secret");
  std::promise<absl::Status> held;
  client.Call(kHold, "x", [&](const absl::Status& s, std::string_view) { held.set_value(s); });
  client.CancelAll();
  auto future = held.get_future();
  REQUIRE(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(future.get().code() == absl::StatusCode::kCancelled);
  CHECK(client.WaitIdle(std::chrono::milliseconds(0)));
}

TEST_CASE("a request over the frame limit is refused by the client without sending it", "[call_stream]") {
  TestServer server;
  CallStreamClient client(server.unix_endpoint(), "secret");
  Outcome refused = CallAndWait(client, kEcho, std::string(cs::kMaxPayloadBytes + 1, 'x'));
  CHECK(refused.status.code() == absl::StatusCode::kResourceExhausted);
  CHECK(CallAndWait(client, kEcho, "small").reply == "echo:small");
}

TEST_CASE("a long call outlives the silence limit while the server's heartbeat comes", "[call_stream]") {
  TestServer server(std::chrono::milliseconds(200));
  CallStreamClient client(server.unix_endpoint(), "secret", std::chrono::milliseconds(1000));
  std::promise<absl::Status> held;
  client.Call(kHold, "long", [&](const absl::Status& s, std::string_view) { held.set_value(s); });
  auto future = held.get_future();
  // Three times the limit: the handler never answers, but the server is alive.
  CHECK(future.wait_for(std::chrono::seconds(3)) == std::future_status::timeout);
  server.Stop();
  REQUIRE(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(future.get().code() == absl::StatusCode::kUnavailable);
}

TEST_CASE("a server that sends nothing (stopped, cut off) fails the calls in flight after the limit",
          "[call_stream]") {
  TestServer server(std::chrono::milliseconds(0));  // no heartbeat: as a stopped process
  CallStreamClient client(server.tcp_endpoint(), "secret", std::chrono::milliseconds(1000));
  // Quiet before the call does not count against it.
  CHECK(CallAndWait(client, kEcho, "before").reply == "echo:before");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  std::promise<absl::Status> held;
  auto start = std::chrono::steady_clock::now();
  client.Call(kHold, "x", [&](const absl::Status& s, std::string_view) { held.set_value(s); });
  auto future = held.get_future();
  REQUIRE(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(1000));
  absl::Status status = future.get();
  CHECK(status.code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(status.message()), Catch::Contains("sent nothing for"));
  CHECK_THAT(std::string(status.message()), Catch::Contains("1 call(s) in flight"));
}

TEST_CASE("connections that show no token are closed after the hello timeout, and only so many may wait",
          "[call_stream]") {
  TestServer server(std::chrono::milliseconds(100), std::chrono::milliseconds(300));
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(RawConnect(server.unix_endpoint()));
  // A fifth stranger finds the four waiting and is closed at once.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  int fifth = RawConnect(server.unix_endpoint());
  char byte;
  CHECK(::recv(fifth, &byte, 1, 0) == 0);
  ::close(fifth);
  // The four are told why and closed once their time is up.
  for (int fd : idle) {
    cs::FrameReader reader;
    bool closed = false;
    auto answer = ReadFrameThenEof(fd, reader, &closed);
    CHECK(answer.kind == cs::kError);
    CHECK(answer.code == static_cast<uint8_t>(absl::StatusCode::kUnauthenticated));
    CHECK_THAT(std::string(answer.payload), Catch::Contains("no cluster token within 300 ms"));
    CHECK(closed);
    ::close(fd);
  }
  CallStreamClient member(server.unix_endpoint(), "secret");
  CHECK(CallAndWait(member, kEcho, "in").reply == "echo:in");
}

TEST_CASE("a new caller is greeted and pinged while the server's polling thread is busy", "[call_stream]") {
  TestServer server(std::chrono::milliseconds(200));
  CallStreamClient first(server.unix_endpoint(), "secret", std::chrono::milliseconds(1000));
  std::promise<Outcome> busy;
  first.Call(kBusy, "3000", [&](const absl::Status& s, std::string_view reply) {
    busy.set_value(Outcome{s, std::string(reply)});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the polling thread runs the busy call
  // A caller that connects now is not heard by the polling thread for 2.7 s, longer than
  // its silence limit: the heartbeat thread accepts it, takes its token and pings it.
  CallStreamClient second(server.tcp_endpoint(), "secret", std::chrono::milliseconds(1000));
  Outcome meanwhile = CallAndWait(second, kEcho, "meanwhile");
  CHECK(meanwhile.status.ok());
  CHECK(meanwhile.reply == "echo:meanwhile");
  auto done = busy.get_future();
  REQUIRE(done.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(done.get().reply == "done");
  // A wrong token sent meanwhile is still refused by the polling thread.
  CallStreamClient stranger(server.tcp_endpoint(), "wrong", std::chrono::milliseconds(1000));
  CHECK(CallAndWait(stranger, kEcho, "x").status.code() == absl::StatusCode::kUnauthenticated);
}
