// Serves byte ranges of this node's sealed objects to other nodes' pullers over the
// object stream (object_stream_protocol.h): a listening socket, and a thread per
// connection (a puller keeps a few open per node). Each request pins the object for
// the time of its send, so it cannot be freed or evicted while bytes leave the arena.
//
// Requests without the cluster token, malformed ones and ranges outside the object are
// refused, counted (object_stream_rejected_unauthenticated, object_stream_malformed,
// object_chunk_requests_rejected) and, unless only the range was wrong, the connection
// closed. Thread-safe; the destructor closes every connection and waits for its thread.
//
// Strangers cannot crowd out members: a new connection must send a request with the
// token within kTokenDeadline; until it has, it takes one of kMaxUnauthenticated slots of
// its own (the oldest is closed when a new one needs a slot), never one of the
// kMaxConnections that members' connections use. A member that finds those all in use is
// answered kBusy (object_stream_busy), which pullers retry.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "common/id.h"
#include "raylet/object_store/local_object_store.h"

namespace orb {

struct ObjectStreamSource {
  // Pins a sealed object for `reader` and says where it is (found=false when it is not
  // here); `unpin` undoes one pin. Called from connection threads.
  std::function<ObjectLocationInArena(const ObjectID& id, const WorkerID& reader)> pin;
  std::function<void(const ObjectID& id, const WorkerID& reader)> unpin;
  const uint8_t* arena = nullptr;
};

class ObjectStreamServer {
 public:
  // Listens on `bind_ip`:`port` (0 picks a free port).
  static absl::StatusOr<std::unique_ptr<ObjectStreamServer>> Start(const std::string& bind_ip, int port,
                                                                   std::string token, ObjectStreamSource source);
  ~ObjectStreamServer();

  int port() const { return port_; }

 private:
  ObjectStreamServer(int listener, int port, std::string token, ObjectStreamSource source);
  void AcceptLoop();
  void Serve(int fd);
  // Answers one request; false when the connection should close. `authenticated`:
  // whether an earlier request on it carried the token (set by this one when it does).
  bool ServeOne(int fd, const WorkerID& reader, bool* authenticated);
  // Moves `fd` from the unauthenticated connections to the members'; false when those
  // are all in use.
  bool Admit(int fd);
  void Forget(int fd);

  static constexpr size_t kMaxConnections = 64;
  static constexpr size_t kMaxUnauthenticated = 64;
  static constexpr int kTokenDeadlineSeconds = 2;
  static constexpr int kIdleMemberSeconds = 60;

  // Constant after construction.
  const int listener_;
  const int port_;
  const std::string token_;
  const ObjectStreamSource source_;

  std::mutex mu_;
  std::condition_variable drained_;
  std::set<int> connections_;  // members', guarded by mu_
  std::list<int> unauthenticated_;  // oldest first, guarded by mu_
  int serving_ = 0;                 // connection threads running, guarded by mu_
  bool stopping_ = false;           // guarded by mu_
  std::thread acceptor_;
};

}  // namespace orb
