// How much memory this node has to offer, and the defaults Ray derives from it: the
// object store takes 30% of the available memory (capped by the free space of
// /dev/shm, where it lives), and the `memory` resource tasks ask for is the rest.
#pragma once

#include <cstdint>
#include <string>

namespace orb {

struct NodeMemory {
  uint64_t available = 0;  // MemAvailable, or less where a cgroup limit leaves less
  uint64_t shm_free = 0;   // free bytes in the file system of the object store
};

// How much of the node's memory is in use: of the machine (MemTotal - MemAvailable), or
// of the node's cgroup limit where that is the tighter bound.
struct MemoryUse {
  uint64_t used = 0;
  uint64_t total = 0;
  double fraction() const { return total == 0 ? 0 : static_cast<double>(used) / static_cast<double>(total); }
};
MemoryUse ReadMemoryUse();

// Reads /proc/meminfo, the cgroup (v2 or v1) limit and usage, and `shm_dir`.
NodeMemory ReadNodeMemory(const std::string& shm_dir = "/dev/shm");

// 30% of available memory, at most 95% of shm_free, at least 64 MiB.
uint64_t DefaultObjectStoreBytes(const NodeMemory& memory);
// Available memory less the object store (0 if the store takes it all).
uint64_t DefaultMemoryResource(const NodeMemory& memory, uint64_t object_store_bytes);

}  // namespace orb
