// The state API in C++, as Ray's ray.util.state: the cluster's tasks, actors, nodes,
// jobs, workers and placement groups as the GCS (and each node) records them. The same
// rows as `orb list <kind>`, with the same filters. Needs orb::Init (a cluster, not
// local mode); a bad filter or kind, or an unreachable GCS, throws orb::Error naming it.
//
//   auto failed = orb::state::ListTasks({{"state", "=", "FAILED"}});
//   for (const auto& t : failed) std::cout << t.name << ": " << t.error_message << "\n";
//   auto alive = orb::state::List("actors", {{"state", "=", "ALIVE"}});
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace orb::state {

// A column compared with a value: predicate "=" or "!=" (without regard to case).
struct Filter {
  std::string key;
  std::string predicate;
  std::string value;
};

// One attempt of a task, as its owner and the worker that ran it reported it.
struct TaskState {
  std::string task_id;
  int attempt = 0;
  std::string name;   // the function, or Class::method
  std::string state;  // PENDING_NODE_ASSIGNMENT, SUBMITTED_TO_WORKER, RUNNING, FINISHED, FAILED
  std::string type;   // NORMAL_TASK, ACTOR_CREATION_TASK, ACTOR_TASK
  std::string job_id, node_id, worker_id, actor_id;
  int worker_pid = 0;
  std::string error_type, error_message;  // FAILED: why
  int64_t start_time_ms = 0, end_time_ms = 0;
  double duration_ms = 0;
  std::map<std::string, double> required_resources;
};

// The tasks the GCS remembers (a bounded history), newest first, at most `limit` (0: all).
std::vector<TaskState> ListTasks(const std::vector<Filter>& filters = {}, int limit = 1000);

// Rows of `kind` (nodes, jobs, actors, tasks, workers, placement-groups), each a map
// from column to its value as text (maps and lists as JSON).
std::vector<std::map<std::string, std::string>> List(const std::string& kind, const std::vector<Filter>& filters = {},
                                                     int limit = 1000);

}  // namespace orb::state
