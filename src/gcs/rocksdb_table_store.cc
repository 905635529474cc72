#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include "gcs/table_store.h"

namespace orb::gcs {
namespace {

// Keys are "<table>\0<key>", so a table is one contiguous, prefix-scannable range.
std::string FullKey(std::string_view table, std::string_view key) {
  std::string full;
  full.reserve(table.size() + 1 + key.size());
  full.append(table).push_back('\0');
  full.append(key);
  return full;
}

absl::Status ToStatus(const rocksdb::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::InternalError("rocksdb: " + s.ToString());
}

class RocksDbTableStore : public TableStore {
 public:
  explicit RocksDbTableStore(std::unique_ptr<rocksdb::DB> db) : db_(std::move(db)) {}

  absl::Status Put(std::string_view table, std::string_view key, std::string_view value) override {
    // The write-ahead log reaches the OS before Put returns, so SIGKILL loses nothing;
    // fsync per write (sync=true) would only add power-loss safety at a large cost.
    return ToStatus(db_->Put(rocksdb::WriteOptions(), FullKey(table, key), rocksdb::Slice(value.data(), value.size())));
  }
  absl::StatusOr<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    std::string value;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), FullKey(table, key), &value);
    if (s.IsNotFound()) return std::optional<std::string>();
    if (!s.ok()) return ToStatus(s);
    return std::optional<std::string>(std::move(value));
  }
  absl::Status Delete(std::string_view table, std::string_view key) override {
    return ToStatus(db_->Delete(rocksdb::WriteOptions(), FullKey(table, key)));
  }
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Scan(std::string_view table,
                                                                         std::string_view prefix) override {
    std::vector<std::pair<std::string, std::string>> out;
    std::string start = FullKey(table, prefix);
    size_t table_prefix = table.size() + 1;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek(start); it->Valid() && it->key().starts_with(start); it->Next()) {
      out.emplace_back(it->key().ToString().substr(table_prefix), it->value().ToString());
    }
    if (!it->status().ok()) return ToStatus(it->status());
    return out;
  }

 private:
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TableStore>> OpenRocksDbTableStore(const std::string& dir) {
  rocksdb::Options options;
  options.create_if_missing = true;
  // A control store holds little data: keep RocksDB's memory small.
  options.write_buffer_size = 4 << 20;
  options.max_write_buffer_number = 2;
  options.max_open_files = 64;
  options.keep_log_file_num = 2;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir, &raw);
  if (!s.ok()) return absl::UnavailableError("cannot open GCS storage at " + dir + ": " + s.ToString());
  return std::unique_ptr<TableStore>(new RocksDbTableStore(std::unique_ptr<rocksdb::DB>(raw)));
}

}  // namespace orb::gcs
