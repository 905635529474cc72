#include "gcs/space_guarded_table_store.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

namespace orb::gcs {

absl::StatusOr<uint64_t> FreeSpaceOf(const std::string& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) {
    return absl::UnavailableError("cannot read the free space of " + dir + ": " + std::strerror(errno));
  }
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

SpaceGuardedTableStore::SpaceGuardedTableStore(std::unique_ptr<TableStore> inner, std::string dir,
                                               uint64_t min_free_bytes, FreeSpaceProbe probe)
    : inner_(std::move(inner)), dir_(std::move(dir)), min_free_bytes_(min_free_bytes), probe_(std::move(probe)) {}

absl::Status SpaceGuardedTableStore::CheckSpace() const {
  auto free = probe_(dir_);
  if (!free.ok()) return free.status();
  if (*free < min_free_bytes_) {
    return absl::ResourceExhaustedError("no space left on " + dir_ + " for the GCS's tables: " +
                                        std::to_string(*free) + " bytes free, " + std::to_string(min_free_bytes_) +
                                        " needed (--min-free-disk-bytes)");
  }
  return absl::OkStatus();
}

absl::Status SpaceGuardedTableStore::Put(std::string_view table, std::string_view key, std::string_view value) {
  if (auto s = CheckSpace(); !s.ok()) return absl::Status(s.code(), std::string(s.message()) + "; the write was not made");
  return inner_->Put(table, key, value);
}

absl::Status SpaceGuardedTableStore::Delete(std::string_view table, std::string_view key) {
  // A delete writes too (a tombstone).
  if (auto s = CheckSpace(); !s.ok()) return absl::Status(s.code(), std::string(s.message()) + "; the write was not made");
  return inner_->Delete(table, key);
}

}  // namespace orb::gcs
