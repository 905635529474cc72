#include "common/shm_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace orb {

namespace {

constexpr uint64_t kReserveStep = uint64_t{64} << 20;

absl::StatusOr<uint8_t*> MapFile(int fd, size_t size, const std::string& path) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return absl::ResourceExhaustedError("cannot map " + path + ": " + std::strerror(errno));
  return static_cast<uint8_t*>(p);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShmArena>> ShmArena::Create(const std::string& path, size_t size) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::PermissionDeniedError("cannot create " + path + ": " + std::strerror(errno));
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return absl::ResourceExhaustedError("cannot size " + path + " to " + std::to_string(size) + " bytes: " +
                                        std::strerror(err));
  }
  auto mapped = MapFile(fd, size, path);
  if (!mapped.ok()) {
    ::close(fd);
    ::unlink(path.c_str());
    return mapped.status();
  }
  return std::unique_ptr<ShmArena>(new ShmArena(path, *mapped, size, /*owner=*/true, fd));
}

absl::Status ShmArena::Reserve(uint64_t end) {
  if (end <= reserved_) return absl::OkStatus();
  if (fd_ < 0) return absl::FailedPreconditionError("only the raylet that made " + path_ + " reserves its pages");
  uint64_t target = std::min<uint64_t>(size_, (end + kReserveStep - 1) / kReserveStep * kReserveStep);
  uint64_t more = target - reserved_;
  auto no_room = [&](const std::string& why) {
    return absl::ResourceExhaustedError("the file system of " + path_ + " has no room for " + std::to_string(more) +
                                        " more bytes of object store (" + why + ")");
  };
  // Checked first: tmpfs would fill itself (and memory) page by page before failing.
  struct statvfs fs {};
  if (::fstatvfs(fd_, &fs) == 0 && static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize < more) {
    return no_room(std::to_string(static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize) + " bytes free");
  }
  // posix_fallocate makes the pages exist now, so a full /dev/shm fails here and not
  // with SIGBUS in the process that writes them.
  int rc = ::posix_fallocate(fd_, static_cast<off_t>(reserved_), static_cast<off_t>(more));
  if (rc != 0) return no_room(std::strerror(rc));
  reserved_ = target;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ShmArena>> ShmArena::Attach(const std::string& path, size_t size, Mapping mapping) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError("cannot open object store " + path + ": " + std::strerror(errno));
  auto mapped = MapFile(fd, size, path);
  ::close(fd);
  if (!mapped.ok()) return mapped.status();
  if (mapping == Mapping::kPopulated) {
    // Best effort: on a kernel without MADV_POPULATE_WRITE (before 5.14) pages fill in
    // as they are touched.
    ::madvise(*mapped, std::min(size, kPopulatedPrefix), MADV_POPULATE_WRITE);
  }
  return std::unique_ptr<ShmArena>(new ShmArena(path, *mapped, size, /*owner=*/false, -1));
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
  if (fd_ >= 0) ::close(fd_);
  if (owner_) ::unlink(path_.c_str());
}

}  // namespace orb
