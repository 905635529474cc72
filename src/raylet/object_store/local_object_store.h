// The node's table of objects in its shared-memory arena: create, seal, get (pin),
// release (unpin), delete, LRU eviction, and spilling to disk.
//
// Life of an object: Create reserves space (the creator then writes the bytes straight
// into the mapped arena) and Seal makes it immutable and visible to readers. The
// creating owner's copy is *primary*: never evicted while the owner holds a reference.
// The owner's Delete frees it once no reader has it pinned, and so does the owner's
// death. Copies pulled from other nodes are *evictable*: kept while space allows,
// evicted least-recently-used first when a Create needs room. When there is room in
// all but not in one piece, sealed objects no reader has pinned are slid toward the
// arena's start (compaction) before anything is evicted.
//
// Spilling (when an ObjectSpiller is given): a Create that cannot fit even then, or a
// store filled past the spilling threshold, writes unpinned primary copies to disk,
// oldest first, in batches (ObjectSpiller, on its own thread), and frees their memory
// once written — only what was written whole and synced; a spill that fails part-way
// leaves the rest in memory. A Get of a spilled object restores it first (making room
// the same way); a restored copy keeps its file, so it can leave memory again without
// a write. Creates waiting for a spill are answered when it ends: with the space, or —
// the disk being full — FailedPrecondition ("out of disk"), nothing having been dropped.
// Without spilling, a Create that cannot fit answers ObjectStoreFull, saying whether
// the store is full or its free space is split up by objects in use; nothing crashes.
//
// A restore that finds no room is never a loss: it waits, trying again whenever memory
// is freed, for up to kRoomGracePeriod, and then its gets are answered not found with
// the transient reason (ObjectLocationInArena::unreadable); the object stays on disk
// for a later Get. A restore whose file is damaged (checksum, truncation) answers
// DataLoss and drops the object here, so that its owner may rebuild it.
//
// Runs on the raylet's event loop; not thread-safe.
#pragma once

#include <chrono>
#include <deque>
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
#include "raylet/object_store/object_spiller.h"

namespace orb {

struct ObjectLocationInArena {
  bool found = false;
  uint64_t offset = 0;
  uint64_t size = 0;
  // Not found, though the store holds the object on disk: why it could not be read
  // back. ResourceExhausted (no room in memory: everything else is in use) and
  // FailedPrecondition (no room: spilling others failed, the disk is full) are
  // transient, the bytes are still on disk; DataLoss: its spill file is damaged, and
  // the copy here is gone. OK when the object is simply not here.
  absl::Status unreadable;
};

struct SpillOptions {
  std::unique_ptr<ObjectSpiller> spiller;  // null: never spill
  // Once more than this fraction of the store is in use, primary copies are spilled
  // until it is not (Ray's object_spilling_threshold).
  double threshold = 0.8;
  // A spill writes at least this much when there is that much to spill: fewer, larger
  // files (Ray's min_spilling_size).
  uint64_t min_batch_bytes = 100ull << 20;
};

// One object as `orb list objects` shows it.
struct StoreObjectSummary {
  ObjectID id;
  uint64_t size = 0;
  WorkerID owner;  // nil for a copy whose owner is not known here
  bool primary = false;
  bool sealed = false;
  int pins = 0;
  bool spilled = false;
  bool in_memory = false;
};

struct SpillStats {
  uint64_t spilled_bytes_total = 0;
  uint64_t spilled_objects_total = 0;
  uint64_t restored_bytes_total = 0;
  uint64_t restored_objects_total = 0;
  uint64_t spill_failures_total = 0;
  uint64_t restore_failures_total = 0;  // spill files found damaged: those copies are gone
  uint64_t bytes_on_disk = 0;    // of live objects
  uint64_t objects_on_disk = 0;  // live objects with a spill file
  uint64_t files = 0;
  uint64_t evicted_objects_total = 0;  // copies dropped from memory to make room
  uint64_t evicted_bytes_total = 0;
};

class LocalObjectStore {
 public:
  // Makes the arena's pages below `end` exist (ShmArena::Reserve); null: nothing to do.
  using Reserver = std::function<absl::Status(uint64_t end)>;
  // Copies `size` bytes within the arena from offset `from` to `to` (the ranges may
  // overlap, as memmove); null: objects are never moved.
  using Mover = std::function<void(uint64_t to, uint64_t from, uint64_t size)>;
  LocalObjectStore(uint64_t capacity, EventLoop* loop, Reserver reserve = nullptr, Mover move = nullptr,
                   SpillOptions spill = {});

  struct Created {
    uint64_t offset = 0;
    bool already_exists = false;
  };
  // ResourceExhausted (ObjectStoreFull) when `size` cannot fit even after eviction.
  // `primary`: the owner's copy (kept while referenced); false for a copy pulled from
  // another node (evictable once unpinned). `writer`: the process filling it (a worker
  // writing a task's result for its owner); nil when it is the owner (or the raylet).
  // An unsealed object whose writer or owner dies is aborted (ForgetWorker), so that a
  // retry's Create makes it afresh. Never spills.
  absl::StatusOr<Created> Create(const ObjectID& id, uint64_t size, const WorkerID& owner, bool primary = true,
                                 const WorkerID& writer = WorkerID());
  using CreateCallback = std::function<void(absl::StatusOr<Created>)>;
  // Create, spilling to make room when the store is full (and spilling is on); `done`
  // may then run later. FailedPrecondition when the spill failed (the disk is full).
  void CreateOrSpill(const ObjectID& id, uint64_t size, const WorkerID& owner, bool primary, const WorkerID& writer,
                     CreateCallback done);
  // Frees an object that was created but never sealed (a failed transfer).
  void Abort(const ObjectID& id);
  // The bytes of a sealed object in memory, for sending to another node; nullptr if absent.
  const ObjectLocationInArena* Peek(const ObjectID& id) const;
  // NotFound when the object was never created.
  absl::Status Seal(const ObjectID& id);

  using GetCallback = std::function<void(std::vector<ObjectLocationInArena>)>;
  // Pins every found object for `reader`, restoring spilled ones first. Waits up to
  // `timeout` for objects not yet sealed here (always for restores), then answers
  // with found=false for those.
  void Get(const std::vector<ObjectID>& ids, const WorkerID& reader, std::chrono::milliseconds timeout,
           GetCallback callback);
  void Release(const std::vector<ObjectID>& ids, const WorkerID& reader);
  // The owner no longer references these objects: free them (and their spill files)
  // once unpinned.
  void Delete(const std::vector<ObjectID>& ids);
  // `worker` died: drop its pins; free the objects it owned (copies too) once unpinned;
  // abort the objects it owned or was writing that are not sealed (their space
  // reclaimed, and a later Create of the same ID starts afresh).
  void ForgetWorker(const WorkerID& worker);

  // --- Copies on other nodes ---
  // `node` pulled a copy of each primary in `ids`; returns those not held here (gone
  // already: the copier frees its copies).
  std::vector<ObjectID> AddCopies(const std::vector<ObjectID>& ids, const NodeID& node);
  // Called when a primary that other nodes copied is freed, with those nodes.
  using CopiesOrphaned = std::function<void(const ObjectID& id, const std::vector<NodeID>& nodes)>;
  void OnCopiesOrphaned(CopiesOrphaned callback) { on_copies_orphaned_ = std::move(callback); }

  std::vector<StoreObjectSummary> List() const;

  // --- Handing primaries to another node (this node is leaving) ---
  struct PrimaryCopy {
    ObjectID id;
    uint64_t size = 0;
    WorkerID owner;
    std::vector<NodeID> copies;
  };
  // The sealed primary copies the owners still reference, in memory or spilled.
  std::vector<PrimaryCopy> Primaries() const;
  // Makes the sealed copy of `id` held here the primary for `owner` (another node handed
  // it over), with `copies` made of it elsewhere. NotFound when no sealed copy is here.
  absl::Status Adopt(const ObjectID& id, const WorkerID& owner, const std::vector<NodeID>& copies);
  // Another node holds the primary of `id` now: this copy goes (once unpinned), and the
  // copies made of it stay, the new primary's now.
  void HandOver(const ObjectID& id);

  uint64_t capacity() const { return allocator_.capacity(); }
  uint64_t used() const { return allocator_.used(); }  // bytes in memory
  size_t num_objects() const { return objects_.size(); }
  // Sealed here, in memory or spilled.
  bool Contains(const ObjectID& id) const;
  bool IsSpilled(const ObjectID& id) const;
  SpillStats spill_stats() const;
  // Each spill directory's use (none without spilling).
  std::vector<ObjectSpiller::DirectoryStats> spill_directories() const {
    return spill_.spiller ? spill_.spiller->directory_stats() : std::vector<ObjectSpiller::DirectoryStats>{};
  }

 private:
  struct Entry {
    uint64_t offset = 0;  // in the arena, while in_memory
    uint64_t size = 0;
    uint64_t seq = 0;  // creation order: the oldest are spilled first
    bool sealed = false;
    bool primary = true;    // the owner still references it
    bool deleted = false;   // its owner let go while it was pinned: free on last release
    bool in_memory = true;  // false: only its spill file holds it
    std::optional<ObjectSpiller::Location> spilled;
    absl::Status unreadable;  // why the last restore could not run (see ObjectLocationInArena)
    int io = 0;  // a spill or restore in flight: the bytes must stay where they are
    bool restoring = false;  // its range is taken, its bytes are on their way back
    WorkerID owner;
    WorkerID writer;  // nil: the owner writes it
    ObjectLocationInArena location;
    std::unordered_map<WorkerID, int> pins;
    std::vector<NodeID> copies;  // nodes that pulled a copy of this primary
    std::list<ObjectID>::iterator lru;  // valid when evictable
    bool in_lru = false;
  };
  struct PendingGet {
    std::vector<ObjectID> ids;
    WorkerID reader;
    GetCallback callback;
    bool answered = false;
    bool no_wait = false;  // waits for restores only, not for objects not sealed yet
  };

  int PinCount(const Entry& e) const;
  // Pinned by a reader, or being written to or read from disk.
  bool Busy(const Entry& e) const { return e.io > 0 || PinCount(e) > 0; }
  bool Readable(const Entry& e) const { return e.sealed && e.in_memory && !e.restoring; }
  void UpdateEvictability(const ObjectID& id, Entry& e);
  void Free(const ObjectID& id);
  // Makes room by dropping a copy: a spilled one leaves memory only, another is freed.
  void Evict(const ObjectID& id);
  // Gives the arena range of a spilled object back; the entry stays, on disk.
  void DropMemory(Entry& e);
  // Slides sealed, unpinned objects toward the arena's start; true when `size` fits then.
  bool CompactFor(uint64_t size);
  // Space for `size` bytes: compacting, then evicting least recently used copies.
  std::optional<uint64_t> AllocateMakingRoom(uint64_t size);
  // Space for `size` bytes with its pages reserved; ResourceExhausted saying why not.
  absl::StatusOr<uint64_t> Place(uint64_t size);
  void Answer(const std::shared_ptr<PendingGet>& get);
  // Answers the gets waiting on `id` that can be answered now; `force`: all of them.
  void WakeGets(const ObjectID& id, bool force);

  // --- Spilling ---
  // Starts writing unpinned primary copies (oldest first) of at least `bytes` in all to
  // disk; false when none can be.
  bool StartSpill(uint64_t bytes);
  void OnSpilled(std::vector<ObjectID> ids, ObjectSpiller::SpillResult result);
  void MaybeSpillAboveThreshold();
  // Reads a spilled object back into memory, then answers the gets waiting on it.
  void StartRestore(const ObjectID& id);
  // The restore of `id` found no room (`why`): try again when memory is freed, and
  // answer its gets with `why` once kRoomGracePeriod has passed without room.
  void WaitForRoom(const ObjectID& id, absl::Status why);
  // Memory was freed, or an object became spillable: retry the restores waiting for room.
  void RoomMayHaveFreed();
  void OnRestored(const ObjectID& id, const absl::Status& status);
  // Runs `retry` when the spill in flight ends, starting one for `bytes` if none runs;
  // false when no spill can make room. `retry` gets OK when the spill wrote anything
  // (room may have been made), else why it wrote nothing.
  bool AfterSpill(uint64_t bytes, std::function<void(const absl::Status&)> retry);

  ArenaAllocator allocator_;
  EventLoop* loop_;
  Reserver reserve_;
  Mover move_;
  SpillOptions spill_;
  CopiesOrphaned on_copies_orphaned_;
  bool spill_in_flight_ = false;
  static constexpr std::chrono::seconds kSpillRetryAfterFailure{2};
  // How long a restore waits for room before its gets hear why there is none (Ray's
  // object store full grace period): long enough for a reader to release, short
  // enough that a Get with nothing to wait for fails fast.
  static constexpr std::chrono::seconds kRoomGracePeriod{2};
  // Restores waiting for room, and when their gets stop waiting.
  std::unordered_map<ObjectID, std::chrono::steady_clock::time_point> awaiting_room_;
  bool room_retry_posted_ = false;
  absl::Status last_spill_error_;
  std::optional<std::chrono::steady_clock::time_point> last_spill_failure_;
  std::vector<std::function<void(const absl::Status&)>> after_spill_;  // run when the spill in flight ends
  SpillStats stats_;
  uint64_t next_seq_ = 0;
  std::unordered_map<ObjectID, Entry> objects_;
  std::list<ObjectID> lru_;  // evictable objects, least recently used first
  std::unordered_map<ObjectID, std::vector<std::shared_ptr<PendingGet>>> waiting_;
};

}  // namespace orb
