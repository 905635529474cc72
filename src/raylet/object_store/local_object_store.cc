#include "raylet/object_store/local_object_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace orb {

LocalObjectStore::LocalObjectStore(uint64_t capacity, EventLoop* loop, Reserver reserve, Mover move, SpillOptions spill)
    : allocator_(capacity),
      loop_(loop),
      reserve_(std::move(reserve)),
      move_(std::move(move)),
      spill_(std::move(spill)) {}

bool LocalObjectStore::Contains(const ObjectID& id) const {
  auto it = objects_.find(id);
  return it != objects_.end() && it->second.sealed;
}

bool LocalObjectStore::IsSpilled(const ObjectID& id) const {
  auto it = objects_.find(id);
  return it != objects_.end() && it->second.spilled.has_value();
}

SpillStats LocalObjectStore::spill_stats() const {
  SpillStats stats = stats_;
  for (const auto& [id, e] : objects_) {
    if (!e.spilled) continue;
    stats.objects_on_disk++;
    stats.bytes_on_disk += e.size;
  }
  stats.files = spill_.spiller ? spill_.spiller->num_files() : 0;
  return stats;
}

int LocalObjectStore::PinCount(const Entry& e) const {
  int n = 0;
  for (const auto& [w, c] : e.pins) n += c;
  return n;
}

void LocalObjectStore::UpdateEvictability(const ObjectID& id, Entry& e) {
  // A spilled copy in memory can leave it at no cost: its bytes are on disk.
  bool evictable = e.sealed && e.in_memory && (!e.primary || e.spilled) && !e.deleted && !Busy(e);
  if (evictable && !e.in_lru) {
    e.lru = lru_.insert(lru_.end(), id);
    e.in_lru = true;
  } else if (!evictable && e.in_lru) {
    lru_.erase(e.lru);
    e.in_lru = false;
  }
}

void LocalObjectStore::Free(const ObjectID& id) {
  auto it = objects_.find(id);
  if (it == objects_.end()) return;
  Entry& e = it->second;
  if (e.in_lru) lru_.erase(e.lru);
  if (e.in_memory) allocator_.Free(e.offset, e.size);
  if (e.spilled) spill_.spiller->Release(e.spilled->path);
  std::vector<NodeID> copies = std::move(e.copies);
  objects_.erase(it);
  awaiting_room_.erase(id);
  RoomMayHaveFreed();
  if (!copies.empty() && on_copies_orphaned_) on_copies_orphaned_(id, copies);
}

void LocalObjectStore::DropMemory(Entry& e) {
  if (!e.in_memory) return;
  if (e.in_lru) {
    lru_.erase(e.lru);
    e.in_lru = false;
  }
  allocator_.Free(e.offset, e.size);
  e.in_memory = false;
  e.location.found = false;
  RoomMayHaveFreed();
}

void LocalObjectStore::Evict(const ObjectID& id) {
  auto it = objects_.find(id);
  if (it == objects_.end()) return;
  ++stats_.evicted_objects_total;
  stats_.evicted_bytes_total += it->second.size;
  if (it->second.spilled) {
    DropMemory(it->second);
  } else {
    Free(id);
  }
}

bool LocalObjectStore::CompactFor(uint64_t size) {
  if (!move_) return false;
  std::vector<std::pair<uint64_t, ObjectID>> by_offset;
  by_offset.reserve(objects_.size());
  for (const auto& [id, e] : objects_) {
    if (e.sealed && e.in_memory && !Busy(e)) by_offset.emplace_back(e.offset, id);
  }
  std::sort(by_offset.begin(), by_offset.end());
  uint64_t moved = 0;
  for (const auto& [offset, id] : by_offset) {
    Entry& e = objects_[id];
    // Freed, its own range coalesces with the free space before it; first fit then
    // gives the lowest place it fits, never above where it is.
    allocator_.Free(e.offset, e.size);
    uint64_t to = *allocator_.Allocate(e.size);
    if (to == e.offset) continue;
    move_(to, e.offset, e.size);
    e.offset = to;
    e.location.offset = to;
    moved += e.size;
  }
  if (moved > 0) spdlog::info("object store compacted: {} bytes moved to make room for {}", moved, size);
  return allocator_.largest_free() >= ArenaAllocator::Rounded(size);
}

std::optional<uint64_t> LocalObjectStore::AllocateMakingRoom(uint64_t size) {
  uint64_t need = ArenaAllocator::Rounded(size == 0 ? 1 : size);
  while (true) {
    if (auto offset = allocator_.Allocate(size)) return offset;
    // Room in all but not in one piece: move objects rather than drop copies.
    if (allocator_.capacity() - allocator_.used() >= need && CompactFor(size)) return allocator_.Allocate(size);
    if (lru_.empty()) return std::nullopt;
    Evict(lru_.front());  // the least recently used evictable copy
  }
}

absl::StatusOr<uint64_t> LocalObjectStore::Place(uint64_t size) {
  auto offset = AllocateMakingRoom(size);
  if (!offset) {
    uint64_t free = allocator_.capacity() - allocator_.used();
    std::string why = free >= ArenaAllocator::Rounded(size)
                          ? " bytes free, but split up by objects in use (at most " +
                                std::to_string(allocator_.largest_free()) + " in one piece)"
                          : " bytes free and every other object is in use";
    return absl::ResourceExhaustedError("object store full: " + std::to_string(size) + " bytes requested, " +
                                        std::to_string(free) + " of " + std::to_string(allocator_.capacity()) + why);
  }
  if (reserve_) {
    if (absl::Status s = reserve_(*offset + size); !s.ok()) {
      allocator_.Free(*offset, size);
      return absl::ResourceExhaustedError("object store full: " + std::string(s.message()));
    }
  }
  return *offset;
}

absl::StatusOr<LocalObjectStore::Created> LocalObjectStore::Create(const ObjectID& id, uint64_t size,
                                                                   const WorkerID& owner, bool primary,
                                                                   const WorkerID& writer) {
  auto existing = objects_.find(id);
  if (existing != objects_.end()) return Created{existing->second.offset, true};
  if (ArenaAllocator::Rounded(size) > allocator_.capacity()) {
    return absl::ResourceExhaustedError("object of " + std::to_string(size) + " bytes is larger than the object store (" +
                                        std::to_string(allocator_.capacity()) + " bytes)");
  }
  auto offset = Place(size);
  if (!offset.ok()) return offset.status();
  Entry& e = objects_[id];
  e.offset = *offset;
  e.size = size;
  e.seq = next_seq_++;
  e.owner = owner;
  e.writer = writer;
  e.primary = primary;
  e.location = {true, *offset, size};
  return Created{*offset, false};
}

void LocalObjectStore::CreateOrSpill(const ObjectID& id, uint64_t size, const WorkerID& owner, bool primary,
                                     const WorkerID& writer, CreateCallback done) {
  auto created = Create(id, size, owner, primary, writer);
  bool could_spill = spill_.spiller && created.status().code() == absl::StatusCode::kResourceExhausted &&
                     ArenaAllocator::Rounded(size) <= allocator_.capacity();
  if (created.ok() || !could_spill) return done(std::move(created));
  bool waiting = AfterSpill(ArenaAllocator::Rounded(size), [this, id, size, owner, primary, writer,
                                                            done](const absl::Status& spilled) {
    if (!spilled.ok()) {
      return done(absl::FailedPreconditionError("out of disk: the object store is full and spilling failed: " +
                                                std::string(spilled.message())));
    }
    CreateOrSpill(id, size, owner, primary, writer, done);
  });
  if (!waiting) done(std::move(created));  // nothing can be spilled: every object is in use
}

void LocalObjectStore::Abort(const ObjectID& id) {
  auto it = objects_.find(id);
  if (it != objects_.end() && !it->second.sealed) Free(id);
}

const ObjectLocationInArena* LocalObjectStore::Peek(const ObjectID& id) const {
  auto it = objects_.find(id);
  return it == objects_.end() || !Readable(it->second) ? nullptr : &it->second.location;
}

absl::Status LocalObjectStore::Seal(const ObjectID& id) {
  auto it = objects_.find(id);
  if (it == objects_.end()) return absl::NotFoundError("seal of unknown object " + id.Hex());
  it->second.sealed = true;
  UpdateEvictability(id, it->second);
  WakeGets(id, /*force=*/false);
  MaybeSpillAboveThreshold();
  return absl::OkStatus();
}

void LocalObjectStore::WakeGets(const ObjectID& id, bool force) {
  auto waiting = waiting_.find(id);
  if (waiting == waiting_.end()) return;
  auto gets = std::move(waiting->second);
  waiting_.erase(waiting);
  for (auto& get : gets) {
    if (get->answered) continue;
    bool all = true;
    for (const auto& other : get->ids) {
      auto it = objects_.find(other);
      if (it != objects_.end() && Readable(it->second)) continue;
      bool restoring = it != objects_.end() && it->second.restoring;
      if (get->no_wait && !restoring) continue;  // answered as absent
      all = false;
    }
    if (all || force) Answer(get);
  }
}

void LocalObjectStore::Answer(const std::shared_ptr<PendingGet>& get) {
  get->answered = true;
  std::vector<ObjectLocationInArena> locations;
  locations.reserve(get->ids.size());
  for (const auto& id : get->ids) {
    ObjectLocationInArena loc;
    auto it = objects_.find(id);
    if (it != objects_.end() && Readable(it->second)) {
      loc = {true, it->second.offset, it->second.size};
      it->second.pins[get->reader]++;
      UpdateEvictability(id, it->second);
    } else if (it != objects_.end() && it->second.sealed) {
      loc.unreadable = it->second.unreadable;
    }
    locations.push_back(loc);
  }
  get->callback(std::move(locations));
}

void LocalObjectStore::Get(const std::vector<ObjectID>& ids, const WorkerID& reader,
                           std::chrono::milliseconds timeout, GetCallback callback) {
  auto get = std::make_shared<PendingGet>(PendingGet{ids, reader, std::move(callback)});
  get->no_wait = timeout.count() <= 0;
  bool unsealed = false;   // not here yet: waited for up to `timeout`
  bool restoring = false;  // on disk: waited for, however long the caller said it would wait
  for (const auto& id : ids) {
    auto it = objects_.find(id);
    if (it != objects_.end() && Readable(it->second)) continue;
    waiting_[id].push_back(get);
    if (it != objects_.end() && it->second.sealed) {
      restoring = true;
      StartRestore(id);
    } else {
      unsealed = true;
    }
  }
  if ((!unsealed || timeout.count() <= 0) && !restoring) {
    Answer(get);
    return;
  }
  if (!unsealed || timeout.count() <= 0) return;  // answered when the restores end
  loop_->RunAfter(timeout, [this, get] {
    if (!get->answered) Answer(get);
  });
}

void LocalObjectStore::Release(const std::vector<ObjectID>& ids, const WorkerID& reader) {
  for (const auto& id : ids) {
    auto it = objects_.find(id);
    if (it == objects_.end()) continue;
    auto pin = it->second.pins.find(reader);
    if (pin == it->second.pins.end()) continue;
    if (--pin->second == 0) it->second.pins.erase(pin);
    if (it->second.deleted && !Busy(it->second)) {
      Free(id);  // deleted by its owner while pinned
      continue;
    }
    UpdateEvictability(id, it->second);
    if (!Busy(it->second)) RoomMayHaveFreed();  // it may be evicted or spilled now
  }
}

void LocalObjectStore::Delete(const std::vector<ObjectID>& ids) {
  for (const auto& id : ids) {
    auto it = objects_.find(id);
    if (it == objects_.end()) continue;
    if (!Busy(it->second)) {
      Free(id);
    } else {
      it->second.deleted = true;  // freed by the last Release (or when its disk I/O ends)
      UpdateEvictability(id, it->second);
    }
  }
}

void LocalObjectStore::ForgetWorker(const WorkerID& worker) {
  std::vector<ObjectID> to_free;
  for (auto& [id, e] : objects_) {
    e.pins.erase(worker);
    bool owned = !e.owner.IsNil() && e.owner == worker;
    if (!e.sealed && (owned || (!e.writer.IsNil() && e.writer == worker))) {
      to_free.push_back(id);  // never finished: nobody can read it, and a retry writes it afresh
      continue;
    }
    // Its owner is gone, and with it every reference: readers get OwnerDiedError, so
    // the copy goes as soon as nobody has it pinned.
    if (owned) e.deleted = true;
    if (e.deleted && !Busy(e)) to_free.push_back(id);
  }
  for (const auto& id : to_free) Free(id);
  for (auto& [id, e] : objects_) UpdateEvictability(id, e);
}

std::vector<ObjectID> LocalObjectStore::AddCopies(const std::vector<ObjectID>& ids, const NodeID& node) {
  std::vector<ObjectID> unknown;
  for (const auto& id : ids) {
    auto it = objects_.find(id);
    if (it == objects_.end() || !it->second.primary || it->second.deleted) {
      unknown.push_back(id);
      continue;
    }
    auto& copies = it->second.copies;
    if (std::find(copies.begin(), copies.end(), node) == copies.end()) copies.push_back(node);
  }
  return unknown;
}

std::vector<StoreObjectSummary> LocalObjectStore::List() const {
  std::vector<StoreObjectSummary> out;
  out.reserve(objects_.size());
  for (const auto& [id, e] : objects_) {
    out.push_back({id, e.size, e.owner, e.primary, e.sealed, PinCount(e), e.spilled.has_value(), e.in_memory});
  }
  return out;
}

std::vector<LocalObjectStore::PrimaryCopy> LocalObjectStore::Primaries() const {
  std::vector<PrimaryCopy> out;
  for (const auto& [id, e] : objects_) {
    if (e.sealed && e.primary && !e.deleted) out.push_back({id, e.size, e.owner, e.copies});
  }
  return out;
}

absl::Status LocalObjectStore::Adopt(const ObjectID& id, const WorkerID& owner, const std::vector<NodeID>& copies) {
  auto it = objects_.find(id);
  if (it == objects_.end() || !it->second.sealed) return absl::NotFoundError("object " + id.Hex() + " is not sealed here");
  Entry& e = it->second;
  e.primary = true;
  e.deleted = false;
  e.owner = owner;
  for (const auto& node : copies) {
    if (std::find(e.copies.begin(), e.copies.end(), node) == e.copies.end()) e.copies.push_back(node);
  }
  UpdateEvictability(id, e);
  return absl::OkStatus();
}

void LocalObjectStore::HandOver(const ObjectID& id) {
  auto it = objects_.find(id);
  if (it == objects_.end()) return;
  it->second.copies.clear();
  Delete({id});
}

// --- Spilling ---

bool LocalObjectStore::AfterSpill(uint64_t bytes, std::function<void(const absl::Status&)> retry) {
  if (!spill_in_flight_ && !StartSpill(bytes)) return false;
  after_spill_.push_back(std::move(retry));
  return true;
}

bool LocalObjectStore::StartSpill(uint64_t bytes) {
  if (!spill_.spiller || spill_in_flight_) return false;
  std::vector<std::pair<uint64_t, ObjectID>> candidates;
  for (const auto& [id, e] : objects_) {
    if (e.sealed && e.in_memory && e.primary && !e.spilled && !e.deleted && !Busy(e)) candidates.emplace_back(e.seq, id);
  }
  if (candidates.empty()) return false;
  std::sort(candidates.begin(), candidates.end());
  uint64_t target = std::max(bytes, spill_.min_batch_bytes);
  std::vector<ObjectSpiller::Item> items;
  std::vector<ObjectID> ids;
  uint64_t total = 0;
  for (const auto& [seq, id] : candidates) {
    if (total >= target) break;
    Entry& e = objects_[id];
    e.io++;  // stays put, and is not freed, until written
    UpdateEvictability(id, e);
    items.push_back({id, e.offset, e.size});
    ids.push_back(id);
    total += ArenaAllocator::Rounded(e.size);
  }
  spill_in_flight_ = true;
  spdlog::debug("spilling {} object(s), {} bytes, to {}", ids.size(), total, spill_.spiller->dirs_text());
  spill_.spiller->Spill(std::move(items),
                        [this, ids](ObjectSpiller::SpillResult result) { OnSpilled(ids, std::move(result)); });
  return true;
}

void LocalObjectStore::OnSpilled(std::vector<ObjectID> ids, ObjectSpiller::SpillResult result) {
  spill_in_flight_ = false;
  if (!result.error.ok()) {
    stats_.spill_failures_total++;
    last_spill_failure_ = std::chrono::steady_clock::now();
    last_spill_error_ = result.error;
    spdlog::warn("object spilling failed ({} of {} object(s) written; the rest stay in memory): {}",
                 result.written.size(), ids.size(), std::string(result.error.message()));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = objects_.find(ids[i]);
    if (it == objects_.end()) continue;
    Entry& e = it->second;
    e.io--;
    if (i < result.written.size()) {
      e.spilled = result.written[i];
      stats_.spilled_bytes_total += e.size;
      stats_.spilled_objects_total++;
    }
    if (e.deleted && !Busy(e)) {
      Free(ids[i]);
      continue;
    }
    if (e.spilled && !Busy(e)) DropMemory(e);  // what the spill was for; a pinned one leaves later
    UpdateEvictability(ids[i], e);
  }
  // Anything written may have made room: those waiting try again (and spill more if
  // they must); a spill that wrote nothing made none.
  absl::Status progress = result.written.empty() ? result.error : absl::OkStatus();
  auto waiting = std::move(after_spill_);
  after_spill_.clear();
  for (auto& retry : waiting) retry(progress);
  MaybeSpillAboveThreshold();
}

void LocalObjectStore::MaybeSpillAboveThreshold() {
  if (!spill_.spiller || spill_in_flight_) return;
  // After a failed spill (a full disk) the store does not keep trying on its own for a
  // while; creates that need room still try, and fail with OutOfDisk.
  if (last_spill_failure_ && std::chrono::steady_clock::now() - *last_spill_failure_ < kSpillRetryAfterFailure) return;
  auto limit = static_cast<uint64_t>(spill_.threshold * static_cast<double>(allocator_.capacity()));
  if (allocator_.used() > limit) StartSpill(allocator_.used() - limit);
}

void LocalObjectStore::StartRestore(const ObjectID& id) {
  auto it = objects_.find(id);
  if (it == objects_.end() || it->second.in_memory || it->second.io > 0) return;  // restoring already
  Entry& e = it->second;
  auto offset = Place(e.size);
  if (!offset.ok()) {
    // Room first, by spilling others; but after the disk refused a spill lately, only
    // by room made another way (a release, a delete).
    bool disk_refused = last_spill_failure_ &&
                        std::chrono::steady_clock::now() - *last_spill_failure_ < kSpillRetryAfterFailure;
    std::string what = "no room in the object store to read object " + id.Hex() + " back from disk";
    if (spill_in_flight_ || !disk_refused) {
      bool waiting = AfterSpill(ArenaAllocator::Rounded(e.size), [this, id, what](const absl::Status& spilled) {
        if (spilled.ok()) return StartRestore(id);
        WaitForRoom(id, absl::FailedPreconditionError("out of disk: " + what + ", and spilling other objects failed: " +
                                                      std::string(spilled.message())));
      });
      if (waiting) return;
    }
    WaitForRoom(id, disk_refused ? absl::FailedPreconditionError("out of disk: " + what +
                                                                 ", and spilling other objects failed: " +
                                                                 std::string(last_spill_error_.message()))
                                 : absl::ResourceExhaustedError(what + ": " + std::string(offset.status().message())));
    return;
  }
  awaiting_room_.erase(id);
  e.unreadable = absl::OkStatus();
  e.offset = *offset;
  e.location = {false, *offset, e.size};
  e.in_memory = true;  // its range is taken; Readable only once the bytes are back
  e.restoring = true;
  e.io++;
  spill_.spiller->Restore(*e.spilled, *offset, e.size, [this, id](absl::Status status) { OnRestored(id, status); });
}

void LocalObjectStore::OnRestored(const ObjectID& id, const absl::Status& status) {
  auto it = objects_.find(id);
  if (it == objects_.end()) return;
  Entry& e = it->second;
  e.io--;
  e.restoring = false;
  if (!status.ok()) {
    // Damaged on disk: the copy here is gone. Its readers hear why, and the entry goes,
    // so that its owner can rebuild it under the same ID.
    spdlog::error("spilled object {} is lost on this node: {}", id.Hex(), std::string(status.message()));
    stats_.restore_failures_total++;
    e.unreadable = status;
    DropMemory(e);
    WakeGets(id, /*force=*/true);
    Free(id);
    return;
  }
  e.location.found = true;
  stats_.restored_bytes_total += e.size;
  stats_.restored_objects_total++;
  if (e.deleted && !Busy(e)) {
    WakeGets(id, /*force=*/true);
    Free(id);
    return;
  }
  UpdateEvictability(id, e);
  WakeGets(id, /*force=*/false);
}

void LocalObjectStore::WaitForRoom(const ObjectID& id, absl::Status why) {
  auto it = objects_.find(id);
  if (it == objects_.end()) return;
  spdlog::debug("restore of {} waits for room: {}", id.Hex(), std::string(why.message()));
  it->second.unreadable = std::move(why);
  auto deadline = std::chrono::steady_clock::now() + kRoomGracePeriod;
  if (!awaiting_room_.try_emplace(id, deadline).second) return;  // its deadline stands
  loop_->RunAfter(kRoomGracePeriod, [this, id] {
    auto parked = awaiting_room_.find(id);
    // Restored or freed since; or restored and waiting again, with a later deadline.
    if (parked == awaiting_room_.end() || std::chrono::steady_clock::now() < parked->second) return;
    awaiting_room_.erase(parked);
    WakeGets(id, /*force=*/true);  // answered with the reason; the bytes stay on disk
  });
}

void LocalObjectStore::RoomMayHaveFreed() {
  if (awaiting_room_.empty() || room_retry_posted_) return;
  room_retry_posted_ = true;
  loop_->Post([this] {
    room_retry_posted_ = false;
    std::vector<ObjectID> ids;
    ids.reserve(awaiting_room_.size());
    for (const auto& [id, deadline] : awaiting_room_) ids.push_back(id);
    for (const auto& id : ids) StartRestore(id);
  });
}

}  // namespace orb
