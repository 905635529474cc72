// The state API's client side: a cluster's nodes, jobs, actors, tasks, workers and
// placement groups as rows (common/state_rows.h), filtered and limited. Shared by
// `orb list` and orb::state. Tasks are filtered by the GCS; the rest here.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcs_service.pb.h"

namespace orb {

struct StateQuery {
  std::string kind;                  // one of StateKinds() but "objects"
  std::vector<std::string> filters;  // "key=value" / "key!=value" on the kind's columns
  int limit = 1000;                  // rows returned at most; 0: all
};

struct StateListing {
  std::vector<nlohmann::json> rows;
  int64_t total = 0;  // rows that matched, before the limit
  // Parts that could not be read (a raylet that did not answer), for the reader to see.
  std::vector<std::string> warnings;
};

// InvalidArgument for an unknown kind or a bad filter (naming it and the columns);
// Unavailable when the GCS cannot be reached.
absl::StatusOr<StateListing> QueryState(const std::string& gcs_address, const std::string& token,
                                        const StateQuery& query);
// Filters and limits rows of `kind` read some other way (objects).
absl::StatusOr<StateListing> FilterRows(const std::string& kind, std::vector<nlohmann::json> rows,
                                        const std::vector<std::string>& filters, int limit);
// The tasks (and object transfers) the GCS remembers, for the timeline.
absl::StatusOr<rpc::ListTasksReply> FetchTaskHistory(const std::string& gcs_address, const std::string& token);

}  // namespace orb
