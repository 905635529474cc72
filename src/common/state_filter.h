// Filters of the state API (`orb list tasks --filter state=FAILED`, orb::state::ListTasks):
// "key=value" or "key!=value" on a row's columns, values compared without regard to
// case. Rows are JSON objects, one per task, actor, node, ...
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace orb {

struct StateFilter {
  std::string key;
  bool equal = true;  // false: "!="
  std::string value;
};

// InvalidArgument naming the filter that is not "key=value" or "key!=value".
absl::StatusOr<std::vector<StateFilter>> ParseStateFilters(const std::vector<std::string>& texts);
// InvalidArgument naming a filter key that is not among `columns` (and listing them).
absl::Status CheckFilterKeys(const std::vector<StateFilter>& filters, const std::vector<std::string>& columns);
// Whether `row` passes every filter. A missing column or a null compares as "".
bool MatchesStateFilters(const nlohmann::json& row, const std::vector<StateFilter>& filters);

}  // namespace orb
