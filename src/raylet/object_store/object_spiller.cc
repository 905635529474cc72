#include "raylet/object_store/object_spiller.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "raylet/object_store/spill_file_io.h"


namespace orb {
namespace {

namespace fs = std::filesystem;

// A directory that failed a write is passed over for this long while another can take
// the batch: a full disk seldom empties at once, and each try costs a file create.
constexpr std::chrono::seconds kSkipFailedDirectory{5};

std::string ErrnoText(int err) { return std::strerror(err); }

std::string RandomTag() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(v));
  return out;
}

// The instance tag in a spill file's or lock's name ("spill-<tag>-<n>.bin[.partial]",
// "spill-<tag>.lock"); empty for other names.
std::string TagOf(const std::string& name) {
  if (name.rfind("spill-", 0) != 0) return "";
  std::string rest = name.substr(6);
  size_t end = rest.find_first_of("-.");
  return end == std::string::npos ? "" : rest.substr(0, end);
}

std::string LockPath(const std::string& dir, const std::string& tag) { return dir + "/spill-" + tag + ".lock"; }

// Takes this instance's lock in `dir`; -1 when it cannot (the directory is unusable now).
int TakeLock(const std::string& dir, const std::string& tag) {
  std::string path = LockPath(dir, tag);
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return -1;
    }
    // Another instance starting up may have taken this file for a dead one's and removed
    // it between our open and flock: make sure the lock held is the file still there.
    struct stat held {}, named {};
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_ino == named.st_ino) return fd;
    ::close(fd);
  }
  return -1;
}

// Removes the spill files in `dir` of every instance but `self` that holds no lock.
void RemoveFilesOfDeadInstances(const std::string& dir, const std::string& self) {
  std::error_code ec;
  std::set<std::string> alive{self}, dead;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::string tag = TagOf(name);
    if (tag.empty() || alive.count(tag) || dead.count(tag) || name != "spill-" + tag + ".lock") continue;
    int fd = ::open(it->path().c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    (free ? dead : alive).insert(tag);
    if (free) ::unlink(it->path().c_str());  // still locked by us: no one can take it meanwhile
    ::close(fd);
  }
  size_t removed = 0;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::string tag = TagOf(name);
    // A file with no lock beside it is an orphan too (its instance removed the lock, or
    // predates locks); a live instance's lock is never removed while it runs.
    if (tag.empty() || alive.count(tag) || fs::exists(LockPath(dir, tag))) continue;
    if (::unlink(it->path().c_str()) == 0) ++removed;
  }
  if (removed > 0) spdlog::info("removed {} spill file(s) of stopped raylets from {}", removed, dir);
}

}  // namespace

struct ObjectSpiller::Directory {
  std::string path;
  int lock_fd = -1;  // held while this instance lives
  std::chrono::steady_clock::time_point skip_until{};  // disk thread only
};

ObjectSpiller::ObjectSpiller(std::vector<std::string> dirs, char* arena, EventLoop* loop)
    : tag_(RandomTag()), arena_(arena), loop_(loop) {
  for (auto& path : dirs) {
    auto d = std::make_unique<Directory>();
    d->path = std::move(path);
    std::error_code ec;
    fs::create_directories(d->path, ec);
    if (!ec) {
      d->lock_fd = TakeLock(d->path, tag_);
      RemoveFilesOfDeadInstances(d->path, tag_);
    }
    dirs_.push_back(std::move(d));
  }
  failures_.resize(dirs_.size());
  last_error_.resize(dirs_.size());
  disk_ = std::make_unique<ThreadPool>(1);
  // A restore reads a large object on up to four threads (the disk thread and helpers).
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  reader_helpers_ = static_cast<int>(std::min(cores, 4u)) - 1;
  if (reader_helpers_ > 0) readers_ = std::make_unique<ThreadPool>(reader_helpers_);
}

ObjectSpiller::~ObjectSpiller() {
  disk_.reset();  // the work queued runs first
  readers_.reset();
  // The objects die with this process: so do their files.
  for (const auto& [path, file] : files_) ::unlink(path.c_str());
  for (const auto& d : dirs_) {
    if (d->lock_fd < 0) continue;
    ::unlink(LockPath(d->path, tag_).c_str());
    ::close(d->lock_fd);
  }
}

std::string ObjectSpiller::dirs_text() const {
  std::string out;
  for (const auto& d : dirs_) out += (out.empty() ? "" : ", ") + d->path;
  return out;
}

ObjectSpiller::SpillResult ObjectSpiller::WriteBatch(size_t d, const std::vector<Item>& items, FileWritten* file) {
  Directory& dir = *dirs_[d];
  SpillResult result;
  auto refused = [&](const std::string& why) {
    result.error = absl::ResourceExhaustedError(dir.path + ": " + why);
    return result;
  };
  std::error_code ec;
  fs::create_directories(dir.path, ec);
  if (ec) return refused("cannot create the directory: " + ec.message());
  if (dir.lock_fd < 0) dir.lock_fd = TakeLock(dir.path, tag_);
  if (dir.lock_fd < 0) return refused("cannot lock it: " + ErrnoText(errno));
  std::string path = dir.path + "/spill-" + tag_ + "-" + std::to_string(next_file_++) + ".bin";
  std::string partial = path + ".partial";
  int fd = ::open(partial.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return refused("cannot create a spill file: " + ErrnoText(errno));
  uint64_t offset = 0;
  int err = 0;
  for (const auto& item : items) {
    uint64_t checksum = 0;
    err = spill_io::WriteChecked(fd, arena_ + item.arena_offset, item.size, offset, &checksum);
    if (err != 0) break;
    result.written.push_back({path, offset, checksum});
    offset += item.size;
  }
  // Keep what was written whole: cut the file after it, then make it durable.
  if (err != 0 && !result.written.empty() && ::ftruncate(fd, static_cast<off_t>(offset)) != 0) result.written.clear();
  if (!result.written.empty() && ::fdatasync(fd) != 0) {
    if (err == 0) err = errno;
    result.written.clear();
  }
  ::close(fd);
  if (!result.written.empty() && ::rename(partial.c_str(), path.c_str()) != 0) {
    if (err == 0) err = errno;
    result.written.clear();
  }
  if (result.written.empty()) ::unlink(partial.c_str());
  file->dir = d;
  file->path = path;
  file->objects = static_cast<int>(result.written.size());
  file->bytes = offset;
  if (err != 0) {
    std::string why = std::to_string(items.size() - result.written.size()) + " of " + std::to_string(items.size()) +
                      " object(s) not written: " + ErrnoText(err);
    result.error = absl::ResourceExhaustedError(dir.path + ": " + why);
  }
  return result;
}

void ObjectSpiller::Spill(std::vector<Item> items, std::function<void(SpillResult)> done) {
  disk_->Post([this, items = std::move(items), done = std::move(done)]() mutable {
    // Directories in turn from the next one, those that failed lately last.
    auto now = std::chrono::steady_clock::now();
    std::vector<size_t> order;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < dirs_.size(); ++i) {
        size_t d = (next_dir_ + i) % dirs_.size();
        if ((dirs_[d]->skip_until <= now) == (pass == 0)) order.push_back(d);
      }
    }
    next_dir_ = (next_dir_ + 1) % dirs_.size();
    SpillResult total;
    std::vector<FileWritten> files;
    std::vector<std::pair<size_t, std::string>> failures;
    std::string why_not;
    size_t next = 0;  // the first item not yet written
    for (size_t d : order) {
      if (next == items.size()) break;
      std::vector<Item> rest(items.begin() + static_cast<std::ptrdiff_t>(next), items.end());
      FileWritten file;
      SpillResult part = WriteBatch(d, rest, &file);
      if (file.objects > 0) files.push_back(file);
      next += part.written.size();
      for (auto& loc : part.written) total.written.push_back(std::move(loc));
      if (!part.error.ok()) {
        dirs_[d]->skip_until = now + kSkipFailedDirectory;
        failures.emplace_back(d, std::string(part.error.message()));
        why_not += (why_not.empty() ? "" : "; ") + std::string(part.error.message());
      }
    }
    if (next < items.size()) {
      total.error = absl::ResourceExhaustedError("cannot spill " + std::to_string(items.size() - next) +
                                                 " object(s): " + why_not);
    }
    loop_->Post([this, total = std::move(total), files = std::move(files), failures = std::move(failures),
                 done = std::move(done)]() mutable {
      for (const auto& f : files) files_[f.path] = LiveFile{f.dir, f.objects, f.bytes};
      for (const auto& [d, why] : failures) {
        failures_[d]++;
        last_error_[d] = why;
      }
      done(std::move(total));
    });
  });
}

void ObjectSpiller::Restore(const Location& from, uint64_t arena_offset, uint64_t size,
                            std::function<void(absl::Status)> done) {
  disk_->Post([this, from, arena_offset, size, done = std::move(done)]() mutable {
    absl::Status status;
    int fd = ::open(from.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      status = absl::DataLossError("spill file " + from.path + " cannot be opened: " + ErrnoText(errno));
    } else {
      uint64_t checksum = 0;
      int err = spill_io::ReadChecked(fd, arena_ + arena_offset, size, from.offset, &checksum, readers_.get(),
                                        reader_helpers_);
      ::close(fd);
      if (err == EIO) {
        status = absl::DataLossError("spill file " + from.path + " is truncated or unreadable: " + std::to_string(size) +
                                     " bytes expected at offset " + std::to_string(from.offset));
      } else if (err != 0) {
        status = absl::DataLossError("spill file " + from.path + " cannot be read: " + ErrnoText(err));
      } else if (checksum != from.checksum) {
        status = absl::DataLossError("spill file " + from.path + " is damaged: the " + std::to_string(size) +
                                     " bytes at offset " + std::to_string(from.offset) + " fail their checksum");
      }
    }
    loop_->Post([status, done = std::move(done)] { done(status); });
  });
}

void ObjectSpiller::Release(const std::string& path) {
  auto it = files_.find(path);
  if (it == files_.end() || --it->second.objects > 0) return;
  files_.erase(it);
  // Queued behind any restore still reading it.
  disk_->Post([path] {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      spdlog::warn("cannot delete spill file {}: {}", path, ErrnoText(errno));
    }
  });
}

std::vector<ObjectSpiller::DirectoryStats> ObjectSpiller::directory_stats() const {
  std::vector<DirectoryStats> out(dirs_.size());
  for (size_t d = 0; d < dirs_.size(); ++d) {
    out[d].path = dirs_[d]->path;
    out[d].failures_total = failures_[d];
    out[d].last_error = last_error_[d];
    struct statvfs fsinfo {};
    if (::statvfs(dirs_[d]->path.c_str(), &fsinfo) == 0) {
      out[d].filesystem_free_bytes = static_cast<int64_t>(fsinfo.f_bavail * fsinfo.f_frsize);
      out[d].filesystem_total_bytes = static_cast<int64_t>(fsinfo.f_blocks * fsinfo.f_frsize);
    }
  }
  for (const auto& [path, file] : files_) {
    out[file.dir].spilled_bytes += file.bytes;
    out[file.dir].files++;
  }
  return out;
}

}  // namespace orb
