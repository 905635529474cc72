#include <map>

#include "gcs/table_store.h"

namespace orb::gcs {
namespace {

class InMemoryTableStore : public TableStore {
 public:
  absl::Status Put(std::string_view table, std::string_view key, std::string_view value) override {
    tables_[std::string(table)][std::string(key)] = std::string(value);
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    auto t = tables_.find(std::string(table));
    if (t == tables_.end()) return std::optional<std::string>();
    auto it = t->second.find(std::string(key));
    if (it == t->second.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  absl::Status Delete(std::string_view table, std::string_view key) override {
    auto t = tables_.find(std::string(table));
    if (t != tables_.end()) t->second.erase(std::string(key));
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Scan(std::string_view table,
                                                                         std::string_view prefix) override {
    std::vector<std::pair<std::string, std::string>> out;
    auto t = tables_.find(std::string(table));
    if (t == tables_.end()) return out;
    for (auto it = t->second.lower_bound(std::string(prefix));
         it != t->second.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      out.emplace_back(it->first, it->second);
    }
    return out;
  }

 private:
  std::map<std::string, std::map<std::string, std::string>> tables_;
};

}  // namespace

std::unique_ptr<TableStore> NewInMemoryTableStore() { return std::make_unique<InMemoryTableStore>(); }

}  // namespace orb::gcs
