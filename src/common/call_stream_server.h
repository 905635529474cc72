// The serving end of the call stream (common/call_stream_protocol.h).
//
// It has no thread of its own: the thread that runs the calls (a worker's task loop)
// calls PollOnce(), which accepts connections, reads frames and hands each request to
// the handler on that same thread — a call that is ready to run runs without a hop to
// another thread. A reply may be sent from any thread (a concurrent actor answers from
// its pool); it is written at once, blocking that thread while the peer's socket is full.
//
// A thread of its own pings every connection each heartbeat interval, so that callers can
// tell a worker running a long task from one that is stopped or cut off. While the
// polling thread is busy (a long call), that thread also accepts new connections and
// takes their hello, so that a new caller is pinged too instead of giving the worker up;
// their requests wait in the socket for the polling thread.
//
// A connection must first present the cluster token (kHello); a wrong token, or a
// frame that is not of this protocol, is answered with an error frame naming the cause
// and the connection is closed. A peer that closes mid-frame is dropped, as is one that
// shows no token within hello_timeout, or that finds max_unauthenticated others waiting
// to. None of these disturbs the other connections.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/call_stream_protocol.h"

namespace orb {

class CallStreamServer {
 public:
  class Connection;
  // Answers one call, once, from any thread.
  class Responder {
   public:
    Responder(std::shared_ptr<Connection> connection, uint64_t call_id);
    void Reply(std::string_view payload);
    void Fail(const absl::Status& status);

   private:
    std::shared_ptr<Connection> connection_;
    uint64_t call_id_;
  };
  using Handler = std::function<void(uint8_t method, std::string_view payload, Responder responder)>;

  struct Options {
    std::string token;
    std::string unix_path;  // empty: no Unix socket
    std::string tcp_ip;     // empty: no TCP
    // How long a reply may wait for a peer that does not read before the connection goes.
    int send_timeout_seconds = 60;
    std::chrono::milliseconds heartbeat_interval = call_stream::kHeartbeatInterval;  // 0: none
    // A connection that has not shown the token this long after it was accepted is
    // closed (checked with each heartbeat); at most this many wait at once.
    std::chrono::milliseconds hello_timeout{5000};
    size_t max_unauthenticated = 64;
  };
  static absl::StatusOr<std::unique_ptr<CallStreamServer>> Start(Options options, Handler handler);
  ~CallStreamServer();

  int port() const { return port_; }
  const std::string& unix_path() const { return options_.unix_path; }

  // Serves what is ready, waiting up to `timeout_ms` (-1: without limit) for something
  // to be: handles at most one readiness round, then returns. Only one thread at a time.
  void PollOnce(int timeout_ms);
  // Makes a PollOnce that waits return now. Thread-safe.
  void Wake();
  // Connections open now (for tests and status).
  size_t connections() const {
    std::lock_guard<std::mutex> lock(connections_mu_);
    return connections_.size();
  }

 private:
  CallStreamServer(Options options, Handler handler);
  // Accepts one connection waiting on `listener`; false when none was.
  bool Accept(int listener);
  // Reads what `fd` has; false when the connection is finished with.
  bool Read(const std::shared_ptr<Connection>& connection);
  bool Dispatch(const std::shared_ptr<Connection>& connection);
  void Drop(int fd);
  void Heartbeats();
  // On the heartbeat thread: takes a new connection's hello if it came whole and the
  // polling thread has not begun reading it (the frames after it stay in the socket).
  void TakeHello(Connection& connection);

  Options options_;
  Handler handler_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int unix_listener_ = -1;
  int tcp_listener_ = -1;
  int port_ = 0;
  mutable std::mutex connections_mu_;
  std::unordered_map<int, std::shared_ptr<Connection>> connections_;  // by fd; guarded by connections_mu_
  std::mutex heartbeat_mu_;
  std::condition_variable heartbeat_cv_;
  bool stopping_ = false;                             // guarded by heartbeat_mu_
  std::vector<std::weak_ptr<Connection>> to_ping_;  // guarded by heartbeat_mu_
  std::thread heartbeat_thread_;
};

}  // namespace orb
