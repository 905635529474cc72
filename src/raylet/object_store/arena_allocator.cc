#include "raylet/object_store/arena_allocator.h"

#include <algorithm>

namespace orb {

ArenaAllocator::ArenaAllocator(uint64_t capacity) : capacity_(capacity / kAlignment * kAlignment) {
  if (capacity_ > 0) free_[0] = capacity_;
}

std::optional<uint64_t> ArenaAllocator::Allocate(uint64_t size) {
  uint64_t need = Rounded(size == 0 ? 1 : size);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need) continue;
    uint64_t offset = it->first;
    uint64_t remaining = it->second - need;
    free_.erase(it);
    if (remaining > 0) free_[offset + need] = remaining;
    used_ += need;
    return offset;
  }
  return std::nullopt;
}

uint64_t ArenaAllocator::largest_free() const {
  uint64_t largest = 0;
  for (const auto& [offset, length] : free_) largest = std::max(largest, length);
  return largest;
}

void ArenaAllocator::Free(uint64_t offset, uint64_t size) {
  uint64_t length = Rounded(size == 0 ? 1 : size);
  used_ -= length;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + length == next->first) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += length;
      return;
    }
  }
  free_[offset] = length;
}

}  // namespace orb
