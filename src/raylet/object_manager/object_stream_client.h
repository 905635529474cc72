// Fetches byte ranges of objects from other nodes' object streams
// (object_stream_protocol.h) straight into memory the caller owns — this node's arena.
// Fetches run on a few threads of their own and reuse connections per node.
//
// Thread-safe. The destructor shuts down open connections (fetches in progress fail)
// and waits for its threads.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/id.h"
#include "common/thread_pool.h"

namespace orb {

class ObjectStreamClient {
 public:
  ObjectStreamClient(std::string token, int threads);
  ~ObjectStreamClient();

  // Reads `length` bytes of object `id` from `offset` on, held by the node whose object
  // stream is at `address` ("ip:port"), into `dest`; then done(status) on a fetch thread.
  // NotFound: the holder does not have it. OutOfRange: not inside the object.
  // Unavailable: cannot connect, the connection broke, or the holder is busy (all its
  // connections for members in use; worth another try). DataLoss: a reply that is not
  // the protocol's. PermissionDenied: the holder refused the cluster token.
  // REQUIRES: `dest` stays valid until `done` runs.
  void Fetch(const std::string& address, const ObjectID& id, uint64_t offset, uint64_t length, uint8_t* dest,
             std::function<void(absl::Status)> done);

  // Gives up on the node at `address` (it was declared dead): fetches from it now fail
  // at once (Unavailable), those in progress as soon as their socket is shut down.
  void Abandon(const std::string& address);

 private:
  absl::Status FetchNow(const std::string& address, const ObjectID& id, uint64_t offset, uint64_t length,
                        uint8_t* dest);
  // An idle connection to `address` (`reused` set), or a new one; -1 with `error` set
  // on failure, or when `address` was abandoned after `since`.
  int Borrow(const std::string& address, std::chrono::steady_clock::time_point since, bool* reused,
             absl::Status* error);
  void GiveBack(const std::string& address, int fd);
  void Close(int fd);

  const std::string token_;
  std::mutex mu_;
  std::map<std::string, std::vector<int>> idle_;  // guarded by mu_
  std::map<int, std::string> open_;               // every connection's address, guarded by mu_
  std::map<std::string, std::chrono::steady_clock::time_point> abandoned_;  // when; guarded by mu_
  bool stopping_ = false;                                                    // guarded by mu_
  std::unique_ptr<ThreadPool> threads_;           // last: joined first
};

}  // namespace orb
