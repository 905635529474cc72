// A worker's or driver's view of its node's shared-memory object store: the arena is
// mapped once at connect, and objects are written and read in place. Create, seal,
// get (pin) and release go to the raylet over RPC; bytes never do.
// Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/id.h"
#include "common/rpc.h"
#include "common/shm_arena.h"
#include "orb/internal/runtime.h"
#include "raylet_service.grpc.pb.h"

namespace orb {

class StoreClient {
 public:
  StoreClient(RpcClient<rpc::RayletService>* raylet, WorkerID self, std::unique_ptr<ShmArena> arena);
  // Views may outlive the client (a numpy array over the store, kept after shutdown):
  // they keep the mapping, and their pins are then dropped with this worker's.
  ~StoreClient();

  // Copies `bytes` into a new sealed object owned by `owner`. ResourceExhausted when the
  // store cannot hold it (ObjectStoreFull); FailedPrecondition when it would have to
  // spill to a full disk (OutOfDisk).
  absl::Status Put(const ObjectID& id, const std::string& bytes, const rpc::Address& owner);
  // Creates a `size`-byte object, lets `write` fill it in place, and seals it.
  absl::Status PutWith(const ObjectID& id, size_t size, const rpc::Address& owner,
                       const std::function<void(char*)>& write);
  // A zero-copy view of a sealed object, pinned while the buffer lives. NotFound when it
  // is not sealed here within `timeout_ms`; for an object this node holds on disk:
  // ResourceExhausted (ObjectStoreFull) or FailedPrecondition (OutOfDisk) when no room
  // could be made to read it back (transient: the bytes are still there), DataLoss when
  // its spill file is damaged (the copy is gone).
  absl::StatusOr<std::shared_ptr<internal::ValueBuffer>> Get(const ObjectID& id, int64_t timeout_ms);
  // Has this node's raylet copy an object from `source` (another node) into the local
  // store, then returns a zero-copy view of the copy. ObjectLost / ResourceExhausted
  // carry the raylet's reason.
  // `owner`: the object's owner when known (nil otherwise): the copy goes if it dies.
  absl::StatusOr<std::shared_ptr<internal::ValueBuffer>> Pull(const ObjectID& id, const NodeID& source, uint64_t size,
                                                              const WorkerID& owner);
  // Asks the raylet to free an object this process owned, whose primary copy is at
  // `primary` (nil: this node), and every copy of it (fire and forget).
  void Delete(const ObjectID& id, const NodeID& primary = NodeID());

 private:
  // A view of [offset, offset+size) of the arena that releases its pin when dropped.
  absl::StatusOr<std::shared_ptr<internal::ValueBuffer>> View(const ObjectID& id, uint64_t offset, uint64_t size);

  // Where views send their releases; its raylet is cleared when the client goes.
  struct ReleaseChannel {
    std::mutex mu;
    RpcClient<rpc::RayletService>* raylet;
  };

  RpcClient<rpc::RayletService>* raylet_;
  WorkerID self_;
  std::shared_ptr<ShmArena> arena_;
  std::shared_ptr<ReleaseChannel> releases_;
};

}  // namespace orb
