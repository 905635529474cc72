// First-fit allocator of byte ranges within a fixed-size arena, with coalescing of
// neighbouring free ranges. Offsets are aligned to 64 bytes (a cache line).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace orb {

class ArenaAllocator {
 public:
  static constexpr uint64_t kAlignment = 64;

  explicit ArenaAllocator(uint64_t capacity);

  // An offset for `size` bytes, or nothing when no free range is large enough.
  std::optional<uint64_t> Allocate(uint64_t size);
  // Returns a range given by Allocate (same offset and size).
  void Free(uint64_t offset, uint64_t size);

  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  // The longest free range: what the next Allocate can give at most.
  uint64_t largest_free() const;
  static uint64_t Rounded(uint64_t size) { return (size + kAlignment - 1) / kAlignment * kAlignment; }

 private:
  uint64_t capacity_;
  uint64_t used_ = 0;
  std::map<uint64_t, uint64_t> free_;  // offset → length
};

}  // namespace orb
