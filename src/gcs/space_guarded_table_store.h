// A TableStore that refuses writes while the disk under it is nearly full, instead of
// letting the database run out of space mid-write (Debian's RocksDB then aborts on an
// assertion): a write with less than `min_free_bytes` free fails with ResourceExhausted
// naming the directory and what is free, and the GCS answers the caller with that. Reads
// always go through. A decorator, so the real store and the check test apart.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "gcs/table_store.h"

namespace orb::gcs {

// Free bytes of the file system holding `dir`; injected in tests.
using FreeSpaceProbe = std::function<absl::StatusOr<uint64_t>(const std::string& dir)>;
absl::StatusOr<uint64_t> FreeSpaceOf(const std::string& dir);

class SpaceGuardedTableStore : public TableStore {
 public:
  SpaceGuardedTableStore(std::unique_ptr<TableStore> inner, std::string dir, uint64_t min_free_bytes,
                         FreeSpaceProbe probe = FreeSpaceOf);

  // OK when the directory has room; the ResourceExhausted a write would get otherwise.
  absl::Status CheckSpace() const;

  absl::Status Put(std::string_view table, std::string_view key, std::string_view value) override;
  absl::StatusOr<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    return inner_->Get(table, key);
  }
  absl::Status Delete(std::string_view table, std::string_view key) override;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Scan(std::string_view table,
                                                                         std::string_view prefix) override {
    return inner_->Scan(table, prefix);
  }

 private:
  std::unique_ptr<TableStore> inner_;
  std::string dir_;
  uint64_t min_free_bytes_;
  FreeSpaceProbe probe_;
};

}  // namespace orb::gcs
