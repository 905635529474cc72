#include "common/shm_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace orb {

static absl::StatusOr<uint8_t*> MapFile(int fd, size_t size, const std::string& path,
                                        ShmArena::Mapping mapping = ShmArena::Mapping::kPopulated) {
  int flags = MAP_SHARED | (mapping == ShmArena::Mapping::kPopulated ? MAP_POPULATE : 0);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, fd, 0);
  if (p == MAP_FAILED) return absl::ResourceExhaustedError("cannot map " + path + ": " + std::strerror(errno));
  return static_cast<uint8_t*>(p);
}

absl::StatusOr<std::unique_ptr<ShmArena>> ShmArena::Create(const std::string& path, size_t size) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::PermissionDeniedError("cannot create " + path + ": " + std::strerror(errno));
  // posix_fallocate reserves the pages now, so a full /dev/shm fails here, not with SIGBUS later.
  int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(size));
  if (rc != 0) {
    ::close(fd);
    ::unlink(path.c_str());
    return absl::ResourceExhaustedError("cannot reserve " + std::to_string(size) + " bytes in " + path + ": " +
                                        std::strerror(rc));
  }
  auto mapped = MapFile(fd, size, path);
  ::close(fd);
  if (!mapped.ok()) {
    ::unlink(path.c_str());
    return mapped.status();
  }
  return std::unique_ptr<ShmArena>(new ShmArena(path, *mapped, size, /*owner=*/true));
}

absl::StatusOr<std::unique_ptr<ShmArena>> ShmArena::Attach(const std::string& path, size_t size, Mapping mapping) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError("cannot open object store " + path + ": " + std::strerror(errno));
  auto mapped = MapFile(fd, size, path, mapping);
  ::close(fd);
  if (!mapped.ok()) return mapped.status();
  return std::unique_ptr<ShmArena>(new ShmArena(path, *mapped, size, /*owner=*/false));
}

int ShmArena::RemoveStaleArenas(const std::string& dir, const std::string& prefix) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    pid_t pid = static_cast<pid_t>(std::atoi(name.c_str() + prefix.size()));
    if (pid <= 0) continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH && ::unlink(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

ShmArena::~ShmArena() {
  ::munmap(data_, size_);
  if (owner_) ::unlink(path_.c_str());
}

}  // namespace orb
