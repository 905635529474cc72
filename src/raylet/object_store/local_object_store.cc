#include "raylet/object_store/local_object_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace orb {

LocalObjectStore::LocalObjectStore(uint64_t capacity, EventLoop* loop, Reserver reserve, Mover move)
    : allocator_(capacity), loop_(loop), reserve_(std::move(reserve)), move_(std::move(move)) {}

bool LocalObjectStore::Contains(const ObjectID& id) const {
  auto it = objects_.find(id);
  return it != objects_.end() && it->second.sealed;
}

int LocalObjectStore::PinCount(const Entry& e) const {
  int n = 0;
  for (const auto& [w, c] : e.pins) n += c;
  return n;
}

void LocalObjectStore::UpdateEvictability(const ObjectID& id, Entry& e) {
  bool evictable = e.sealed && !e.primary && !e.deleted && PinCount(e) == 0;
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
  if (it->second.in_lru) lru_.erase(it->second.lru);
  allocator_.Free(it->second.offset, it->second.size);
  objects_.erase(it);
}

bool LocalObjectStore::CompactFor(uint64_t size) {
  if (!move_) return false;
  std::vector<std::pair<uint64_t, ObjectID>> by_offset;
  by_offset.reserve(objects_.size());
  for (const auto& [id, e] : objects_) {
    if (e.sealed && PinCount(e) == 0) by_offset.emplace_back(e.offset, id);
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
    Free(lru_.front());  // the least recently used evictable copy
  }
}

absl::StatusOr<LocalObjectStore::Created> LocalObjectStore::Create(const ObjectID& id, uint64_t size,
                                                                   const WorkerID& owner, bool primary) {
  auto existing = objects_.find(id);
  if (existing != objects_.end()) return Created{existing->second.offset, true};
  if (ArenaAllocator::Rounded(size) > allocator_.capacity()) {
    return absl::ResourceExhaustedError("object of " + std::to_string(size) + " bytes is larger than the object store (" +
                                        std::to_string(allocator_.capacity()) + " bytes)");
  }
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
  Entry& e = objects_[id];
  e.offset = *offset;
  e.size = size;
  e.owner = owner;
  e.primary = primary;
  e.location = {true, *offset, size};
  return Created{*offset, false};
}

void LocalObjectStore::Abort(const ObjectID& id) {
  auto it = objects_.find(id);
  if (it != objects_.end() && !it->second.sealed) Free(id);
}

const ObjectLocationInArena* LocalObjectStore::Peek(const ObjectID& id) const {
  auto it = objects_.find(id);
  return it == objects_.end() || !it->second.sealed ? nullptr : &it->second.location;
}

absl::Status LocalObjectStore::Seal(const ObjectID& id) {
  auto it = objects_.find(id);
  if (it == objects_.end()) return absl::NotFoundError("seal of unknown object " + id.Hex());
  it->second.sealed = true;
  UpdateEvictability(id, it->second);
  auto waiting = waiting_.find(id);
  if (waiting == waiting_.end()) return absl::OkStatus();
  auto gets = std::move(waiting->second);
  waiting_.erase(waiting);
  for (auto& get : gets) {
    if (get->answered) continue;
    bool all = true;
    for (const auto& other : get->ids) all = all && Contains(other);
    if (all) Answer(get);
  }
  return absl::OkStatus();
}

void LocalObjectStore::Answer(const std::shared_ptr<PendingGet>& get) {
  get->answered = true;
  std::vector<ObjectLocationInArena> locations;
  locations.reserve(get->ids.size());
  for (const auto& id : get->ids) {
    ObjectLocationInArena loc;
    auto it = objects_.find(id);
    if (it != objects_.end() && it->second.sealed) {
      loc = {true, it->second.offset, it->second.size};
      it->second.pins[get->reader]++;
      UpdateEvictability(id, it->second);
    }
    locations.push_back(loc);
  }
  get->callback(std::move(locations));
}

void LocalObjectStore::Get(const std::vector<ObjectID>& ids, const WorkerID& reader,
                           std::chrono::milliseconds timeout, GetCallback callback) {
  auto get = std::make_shared<PendingGet>(PendingGet{ids, reader, std::move(callback)});
  bool missing = false;
  for (const auto& id : ids) {
    if (!Contains(id)) {
      missing = true;
      waiting_[id].push_back(get);
    }
  }
  if (!missing || timeout.count() <= 0) {
    Answer(get);
    return;
  }
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
    if (it->second.deleted && PinCount(it->second) == 0) {
      Free(id);  // deleted by its owner while pinned
      continue;
    }
    UpdateEvictability(id, it->second);
  }
}

void LocalObjectStore::Delete(const std::vector<ObjectID>& ids) {
  for (const auto& id : ids) {
    auto it = objects_.find(id);
    if (it == objects_.end()) continue;
    if (PinCount(it->second) == 0) {
      Free(id);
    } else {
      it->second.deleted = true;  // freed by the last Release
      UpdateEvictability(id, it->second);
    }
  }
}

void LocalObjectStore::ForgetWorker(const WorkerID& worker) {
  std::vector<ObjectID> to_free;
  for (auto& [id, e] : objects_) {
    e.pins.erase(worker);
    if (e.owner == worker) {
      e.primary = false;
      if (!e.sealed) to_free.push_back(id);  // never finished: nobody can read it
    }
    if (e.deleted && PinCount(e) == 0) to_free.push_back(id);
  }
  for (const auto& id : to_free) Free(id);
  for (auto& [id, e] : objects_) UpdateEvictability(id, e);
}

}  // namespace orb
