// orb::state (include/orb/state.h) over the state client the CLI uses.
#include "common/state_client.h"
#include "common/state_rows.h"
#include "core/current_core_worker.h"
#include "orb/errors.h"
#include "orb/state.h"

namespace orb::state {
namespace {

std::vector<nlohmann::json> Query(const std::string& kind, const std::vector<Filter>& filters, int limit) {
  std::vector<std::string> texts;
  for (const auto& f : filters) {
    if (f.predicate != "=" && f.predicate != "!=") {
      throw Error("state filter on '" + f.key + "': predicate '" + f.predicate + "' is not \"=\" or \"!=\"");
    }
    texts.push_back(f.key + f.predicate + f.value);
  }
  CoreWorker& worker = internal::CurrentCoreWorker();
  auto listing = QueryState(worker.GcsAddress(), worker.token(), StateQuery{kind, texts, limit});
  if (!listing.ok()) throw Error("orb::state::List(" + kind + "): " + std::string(listing.status().message()));
  return std::move(listing->rows);
}

std::string Text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

std::vector<TaskState> ListTasks(const std::vector<Filter>& filters, int limit) {
  std::vector<TaskState> tasks;
  for (const auto& row : Query("tasks", filters, limit)) {
    TaskState t;
    t.task_id = row["task_id"];
    t.attempt = row["attempt"];
    t.name = row["name"];
    t.state = row["state"];
    t.type = row["type"];
    t.job_id = row["job_id"];
    t.node_id = row["node_id"];
    t.worker_id = row["worker_id"];
    t.actor_id = row["actor_id"];
    t.worker_pid = row["worker_pid"];
    t.error_type = row["error_type"];
    t.error_message = row["error_message"];
    t.start_time_ms = row["start_time_ms"];
    t.end_time_ms = row["end_time_ms"];
    t.duration_ms = row["duration_ms"];
    for (const auto& [k, v] : row["required_resources"].items()) t.required_resources[k] = v.get<double>();
    tasks.push_back(std::move(t));
  }
  return tasks;
}

std::vector<std::map<std::string, std::string>> List(const std::string& kind, const std::vector<Filter>& filters,
                                                     int limit) {
  if (kind == "objects") throw Error("orb::state::List: objects are listed by `orb list objects`, not here");
  std::vector<std::map<std::string, std::string>> rows;
  for (const auto& row : Query(kind, filters, limit)) {
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : row.items()) out[k] = Text(v);
    rows.push_back(std::move(out));
  }
  return rows;
}

}  // namespace orb::state
