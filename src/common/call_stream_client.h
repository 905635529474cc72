// The calling end of the call stream (common/call_stream_protocol.h): one connection to
// one peer, opened on the first call and again on the first call after it broke.
//
// Call() never blocks on the peer: it writes the request on the calling thread when the
// socket takes it at once (the usual case), else leaves the rest to the process's
// call-stream thread, which also reads every connection's replies and runs their
// callbacks. A connection that closes, is refused (wrong token) or cannot be opened
// fails every call in flight on it with UNAVAILABLE (UNAUTHENTICATED for the token),
// naming the peer, as a gRPC channel would; so does a peer that sends nothing (no reply,
// no heartbeat) for `dead_after` while calls are in flight: a stopped process, a
// partitioned node.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "common/call_stream_protocol.h"

namespace orb {

class CallStreamClient {
 public:
  // `reply` is valid only during the callback.
  using Callback = std::function<void(const absl::Status& status, std::string_view reply)>;

  // `endpoint`: "unix:<path>" or "<ip>:<port>".
  CallStreamClient(std::string endpoint, std::string token,
                   std::chrono::milliseconds dead_after = call_stream::kDeadAfter);
  ~CallStreamClient();
  CallStreamClient(const CallStreamClient&) = delete;
  CallStreamClient& operator=(const CallStreamClient&) = delete;

  // Sends one call; `done` runs once: on the call-stream thread, or on this thread when
  // the call fails at once (the request is over the frame limit, the peer is gone).
  void Call(uint8_t method, std::string_view request, Callback done);
  // Reads this client's replies on the calling thread (their callbacks run here) until
  // `done()` or `until`, instead of leaving them to the call-stream thread: a thread
  // about to wait for its own call's result takes one thread hand-off off the path.
  // False, having done nothing, when no call is in flight or another thread is reading.
  bool Assist(const std::function<bool()>& done, std::chrono::steady_clock::time_point until);
  // Fails every call in flight with CANCELLED and closes the connection.
  void CancelAll();
  // Whether no call is in flight, waiting up to `timeout` for it.
  bool WaitIdle(std::chrono::milliseconds timeout);
  const std::string& endpoint() const { return endpoint_; }

  struct Link;  // one connection (defined in the .cc)
  // How often an assisting thread looks at `done()` while no reply comes.
  static constexpr std::chrono::milliseconds kAssistSlice{2};

 private:
  const std::string endpoint_;
  const std::string token_;
  const std::chrono::milliseconds dead_after_;
  std::atomic<uint64_t> next_call_id_{1};
  std::mutex mu_;
  std::shared_ptr<Link> link_;  // guarded by mu_
};

}  // namespace orb
