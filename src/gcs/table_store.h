// The GCS's persistence: a few named tables of key → bytes behind one small interface.
//
// Two backends: RocksDB (durable; a GCS killed with SIGKILL and restarted on the same
// directory finds every committed write) and in-memory (tests, or a GCS without
// --storage-dir). Not thread-safe: the GCS calls it from its event loop only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace orb::gcs {

class TableStore {
 public:
  virtual ~TableStore() = default;
  virtual absl::Status Put(std::string_view table, std::string_view key, std::string_view value) = 0;
  virtual absl::StatusOr<std::optional<std::string>> Get(std::string_view table, std::string_view key) = 0;
  virtual absl::Status Delete(std::string_view table, std::string_view key) = 0;
  // Every (key, value) in `table` whose key starts with `prefix`, in key order.
  virtual absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Scan(std::string_view table,
                                                                                 std::string_view prefix) = 0;
};

std::unique_ptr<TableStore> NewInMemoryTableStore();
// Opens (creating if needed) a RocksDB database in `dir`.
absl::StatusOr<std::unique_ptr<TableStore>> OpenRocksDbTableStore(const std::string& dir);

}  // namespace orb::gcs
