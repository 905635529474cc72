// The node's table of objects in its shared-memory arena: create, seal, get (pin),
// release (unpin), delete, and LRU eviction.
//
// Life of an object: Create reserves space (the creator then writes the bytes straight
// into the mapped arena) and Seal makes it immutable and visible to readers. The
// creating owner's copy is *primary*: never evicted while the owner holds a reference.
// The owner's Delete frees it once no reader has it pinned. Objects whose owner died
// are *evictable*: kept while space allows, evicted least-recently-used first when a
// Create needs room. When there is room in all but not in one piece, sealed objects no
// reader has pinned are slid toward the arena's start (compaction) before anything is
// evicted. A Create that cannot fit even then answers ObjectStoreFull, saying whether
// the store is full or its free space is split up by objects in use; nothing crashes.
//
// Runs on the raylet's event loop; not thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "common/event_loop.h"
#include "common/id.h"
#include "raylet/object_store/arena_allocator.h"

namespace orb {

struct ObjectLocationInArena {
  bool found = false;
  uint64_t offset = 0;
  uint64_t size = 0;
};

class LocalObjectStore {
 public:
  // Makes the arena's pages below `end` exist (ShmArena::Reserve); null: nothing to do.
  using Reserver = std::function<absl::Status(uint64_t end)>;
  // Copies `size` bytes within the arena from offset `from` to `to` (the ranges may
  // overlap, as memmove); null: objects are never moved.
  using Mover = std::function<void(uint64_t to, uint64_t from, uint64_t size)>;
  LocalObjectStore(uint64_t capacity, EventLoop* loop, Reserver reserve = nullptr, Mover move = nullptr);

  struct Created {
    uint64_t offset = 0;
    bool already_exists = false;
  };
  // ResourceExhausted (ObjectStoreFull) when `size` cannot fit even after eviction.
  // `primary`: the owner's copy (kept while referenced); false for a copy pulled from
  // another node (evictable once unpinned).
  absl::StatusOr<Created> Create(const ObjectID& id, uint64_t size, const WorkerID& owner, bool primary = true);
  // Frees an object that was created but never sealed (a failed transfer).
  void Abort(const ObjectID& id);
  // The bytes of a sealed object, for sending to another node; nullptr if absent.
  const ObjectLocationInArena* Peek(const ObjectID& id) const;
  // NotFound when the object was never created.
  absl::Status Seal(const ObjectID& id);

  using GetCallback = std::function<void(std::vector<ObjectLocationInArena>)>;
  // Pins every found object for `reader`. Waits up to `timeout` for objects not yet
  // sealed here, then answers with found=false for those.
  void Get(const std::vector<ObjectID>& ids, const WorkerID& reader, std::chrono::milliseconds timeout,
           GetCallback callback);
  void Release(const std::vector<ObjectID>& ids, const WorkerID& reader);
  // The owner no longer references these objects: free them once unpinned.
  void Delete(const std::vector<ObjectID>& ids);
  // `worker` died: drop its pins; the objects it owned become evictable.
  void ForgetWorker(const WorkerID& worker);

  uint64_t capacity() const { return allocator_.capacity(); }
  uint64_t used() const { return allocator_.used(); }
  size_t num_objects() const { return objects_.size(); }
  bool Contains(const ObjectID& id) const;

 private:
  struct Entry {
    uint64_t offset = 0;
    uint64_t size = 0;
    bool sealed = false;
    bool primary = true;        // the owner still references it
    bool deleted = false;       // its owner let go while it was pinned: free on last release
    WorkerID owner;
    ObjectLocationInArena location;
    std::unordered_map<WorkerID, int> pins;
    std::list<ObjectID>::iterator lru;  // valid when evictable
    bool in_lru = false;
  };
  struct PendingGet {
    std::vector<ObjectID> ids;
    WorkerID reader;
    GetCallback callback;
    bool answered = false;
  };

  int PinCount(const Entry& e) const;
  void UpdateEvictability(const ObjectID& id, Entry& e);
  void Free(const ObjectID& id);
  // Slides sealed, unpinned objects toward the arena's start; true when `size` fits then.
  bool CompactFor(uint64_t size);
  // Space for `size` bytes: compacting, then evicting least recently used copies.
  std::optional<uint64_t> AllocateMakingRoom(uint64_t size);
  void Answer(const std::shared_ptr<PendingGet>& get);

  ArenaAllocator allocator_;
  EventLoop* loop_;
  Reserver reserve_;
  Mover move_;
  std::unordered_map<ObjectID, Entry> objects_;
  std::list<ObjectID> lru_;  // evictable objects, least recently used first
  std::unordered_map<ObjectID, std::vector<std::shared_ptr<PendingGet>>> waiting_;
};

}  // namespace orb
