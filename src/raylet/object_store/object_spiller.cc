#include "raylet/object_store/object_spiller.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace orb {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

// Writes all of [data, data+size) at `offset`; the errno of a failure, else 0.
int WriteAll(int fd, const char* data, uint64_t size, uint64_t offset) {
  while (size > 0) {
    ssize_t n = ::pwrite(fd, data, std::min<uint64_t>(size, 1ull << 30), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ENOSPC;
    data += n;
    size -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return 0;
}

int ReadAll(int fd, char* data, uint64_t size, uint64_t offset) {
  while (size > 0) {
    ssize_t n = ::pread(fd, data, std::min<uint64_t>(size, 1ull << 30), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;  // the file is shorter than what was written to it
    data += n;
    size -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return 0;
}

}  // namespace

ObjectSpiller::ObjectSpiller(std::string dir, char* arena, EventLoop* loop)
    : dir_(std::move(dir)), arena_(arena), loop_(loop), disk_(std::make_unique<ThreadPool>(1)) {}

ObjectSpiller::~ObjectSpiller() {
  disk_.reset();  // the work queued runs first
  // The objects die with this process: so do their files.
  for (const auto& [path, live] : live_objects_) ::unlink(path.c_str());
}

void ObjectSpiller::Spill(std::vector<Item> items,
                          std::function<void(absl::StatusOr<std::vector<Location>>)> done) {
  std::string path = dir_ + "/spill-" + std::to_string(::getpid()) + "-" + std::to_string(next_file_++) + ".bin";
  disk_->Post([this, items = std::move(items), path, done = std::move(done)]() mutable {
    auto result = [&]() -> absl::StatusOr<std::vector<Location>> {
      std::error_code ec;
      std::filesystem::create_directories(dir_, ec);
      if (ec) return absl::ResourceExhaustedError("cannot create the spill directory " + dir_ + ": " + ec.message());
      int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) return absl::ResourceExhaustedError("cannot create spill file " + path + ": " + ErrnoText(errno));
      std::vector<Location> locations;
      uint64_t offset = 0;
      int err = 0;
      for (const auto& item : items) {
        err = WriteAll(fd, arena_ + item.arena_offset, item.size, offset);
        if (err != 0) break;
        locations.push_back({path, offset});
        offset += item.size;
      }
      ::close(fd);
      if (err != 0) {
        ::unlink(path.c_str());
        return absl::ResourceExhaustedError("cannot spill " + std::to_string(items.size()) + " object(s) to " + dir_ +
                                            ": " + ErrnoText(err));
      }
      return locations;
    }();
    loop_->Post([this, path, result = std::move(result), done = std::move(done)]() mutable {
      if (result.ok() && !result->empty()) live_objects_[path] = static_cast<int>(result->size());
      done(std::move(result));
    });
  });
}

void ObjectSpiller::Restore(const Location& from, uint64_t arena_offset, uint64_t size,
                            std::function<void(absl::Status)> done) {
  disk_->Post([this, from, arena_offset, size, done = std::move(done)]() mutable {
    absl::Status status;
    int fd = ::open(from.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      status = absl::NotFoundError("cannot open spill file " + from.path + ": " + ErrnoText(errno));
    } else {
      int err = ReadAll(fd, arena_ + arena_offset, size, from.offset);
      ::close(fd);
      if (err != 0) status = absl::DataLossError("cannot read spill file " + from.path + ": " + ErrnoText(err));
    }
    loop_->Post([status, done = std::move(done)] { done(status); });
  });
}

void ObjectSpiller::Release(const std::string& path) {
  auto it = live_objects_.find(path);
  if (it == live_objects_.end() || --it->second > 0) return;
  live_objects_.erase(it);
  // Queued behind any restore still reading it.
  disk_->Post([path] {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      spdlog::warn("cannot delete spill file {}: {}", path, ErrnoText(errno));
    }
  });
}

}  // namespace orb
