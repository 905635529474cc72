#include "raylet/node_memory.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace orb {
namespace {

constexpr uint64_t kMinObjectStore = uint64_t{64} << 20;

// The first number in `path`; 0 when it is missing or says "max".
uint64_t ReadNumber(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return 0;
  try {
    return std::stoull(word);
  } catch (...) {
    return 0;
  }
}

// A field of /proc/meminfo, in bytes.
uint64_t MemInfo(const std::string& field) {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == field + ":") return kib * 1024;
  }
  return 0;
}

uint64_t MemAvailable() { return MemInfo("MemAvailable"); }

// The node's cgroup memory limit and usage; a zero limit when there is none.
MemoryUse CgroupMemory() {
  MemoryUse use{ReadNumber("/sys/fs/cgroup/memory.current"), ReadNumber("/sys/fs/cgroup/memory.max")};
  if (use.total == 0) {
    use.total = ReadNumber("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    use.used = ReadNumber("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    if (use.total >= (uint64_t{1} << 60)) use.total = 0;  // v1 says "no limit" with a huge number
  }
  return use;
}

// What a cgroup limit leaves: limit - usage; 0 when there is no limit.
uint64_t CgroupHeadroom() {
  MemoryUse cgroup = CgroupMemory();
  return cgroup.total == 0 ? 0 : (cgroup.total > cgroup.used ? cgroup.total - cgroup.used : 1);
}

}  // namespace

MemoryUse ReadMemoryUse() {
  MemoryUse machine;
  machine.total = MemInfo("MemTotal");
  uint64_t available = MemAvailable();
  machine.used = machine.total > available ? machine.total - available : 0;
  MemoryUse cgroup = CgroupMemory();
  return cgroup.total > 0 && cgroup.fraction() > machine.fraction() ? cgroup : machine;
}

NodeMemory ReadNodeMemory(const std::string& shm_dir) {
  NodeMemory memory;
  memory.available = MemAvailable();
  if (uint64_t headroom = CgroupHeadroom(); headroom > 0) memory.available = std::min(memory.available, headroom);
  struct statvfs fs {};
  if (::statvfs(shm_dir.c_str(), &fs) == 0) memory.shm_free = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  return memory;
}

uint64_t DefaultObjectStoreBytes(const NodeMemory& memory) {
  uint64_t bytes = memory.available / 10 * 3;
  if (memory.shm_free > 0) bytes = std::min(bytes, memory.shm_free / 100 * 95);
  return std::max(bytes, kMinObjectStore);
}

uint64_t DefaultMemoryResource(const NodeMemory& memory, uint64_t object_store_bytes) {
  return memory.available > object_store_bytes ? memory.available - object_store_bytes : 0;
}

}  // namespace orb
