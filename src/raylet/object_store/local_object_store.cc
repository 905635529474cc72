#include "raylet/object_store/local_object_store.h"

#include <spdlog/spdlog.h>

namespace orb {

LocalObjectStore::LocalObjectStore(uint64_t capacity, EventLoop* loop, Reserver reserve)
    : allocator_(capacity), loop_(loop), reserve_(std::move(reserve)) {}

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

bool LocalObjectStore::EvictFor(uint64_t size) {
  while (!lru_.empty()) {
    ObjectID victim = lru_.front();
    Free(victim);
    if (auto offset = allocator_.Allocate(size)) {
      allocator_.Free(*offset, size);
      return true;
    }
  }
  return false;
}

absl::StatusOr<LocalObjectStore::Created> LocalObjectStore::Create(const ObjectID& id, uint64_t size,
                                                                   const WorkerID& owner, bool primary) {
  auto existing = objects_.find(id);
  if (existing != objects_.end()) return Created{existing->second.offset, true};
  if (ArenaAllocator::Rounded(size) > allocator_.capacity()) {
    return absl::ResourceExhaustedError("object of " + std::to_string(size) + " bytes is larger than the object store (" +
                                        std::to_string(allocator_.capacity()) + " bytes)");
  }
  auto offset = allocator_.Allocate(size);
  if (!offset && EvictFor(size)) offset = allocator_.Allocate(size);
  if (!offset) {
    return absl::ResourceExhaustedError("object store full: " + std::to_string(size) + " bytes requested, " +
                                        std::to_string(allocator_.capacity() - allocator_.used()) + " of " +
                                        std::to_string(allocator_.capacity()) +
                                        " bytes free and every other object is in use");
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
