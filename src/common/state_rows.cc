#include "common/state_rows.h"

#include <map>

#include "common/id.h"

namespace orb {
namespace {

template <class Map>
nlohmann::json MapJson(const Map& map) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : map) out[k] = v;
  return out;
}

}  // namespace

std::string HexOrEmpty(const std::string& binary) {
  return binary.empty() ? "" : id_internal::ToHex(reinterpret_cast<const uint8_t*>(binary.data()), binary.size());
}

const std::vector<std::string>& StateKinds() {
  static const std::vector<std::string> kinds = {"nodes",   "jobs",   "actors", "tasks",
                                                 "workers", "placement-groups", "objects"};
  return kinds;
}

const std::vector<std::string>& TaskColumns() { return StateColumns("tasks"); }

const std::vector<std::string>& StateColumns(const std::string& kind) {
  static const std::map<std::string, std::vector<std::string>> columns = {
      {"tasks",
       {"task_id", "attempt", "name", "state", "type", "job_id", "node_id", "worker_id", "worker_pid", "actor_id",
        "language", "error_type", "error_message", "start_time_ms", "end_time_ms", "duration_ms",
        "required_resources"}},
      {"nodes",
       {"node_id", "state", "ip", "hostname", "raylet_port", "metrics_export_port", "resources_total",
        "resources_available", "object_store_used_bytes", "object_store_bytes", "labels", "start_time_ms",
        "death_reason"}},
      {"jobs", {"job_id", "state", "driver_ip", "driver_pid", "namespace", "start_time_ms", "end_time_ms"}},
      {"actors",
       {"actor_id", "class_name", "state", "name", "namespace", "job_id", "node_id", "worker_id", "address",
        "num_restarts", "max_restarts", "detached", "death_reason"}},
      {"placement-groups",
       {"placement_group_id", "name", "strategy", "state", "job_id", "bundles", "pending_reason"}},
      {"workers",
       {"worker_id", "node_id", "state", "pid", "job_id", "is_driver", "language", "lease_resources", "port",
        "start_time_ms", "log_file", "cpu_limit", "memory_limit_bytes", "cpu_seconds", "memory_bytes"}},
      {"objects",
       {"object_id", "owner", "state", "size_bytes", "pinned", "spilled", "reconstructable", "copies", "references",
        "error"}},
  };
  static const std::vector<std::string> none;
  auto it = columns.find(kind);
  return it == columns.end() ? none : it->second;
}

nlohmann::json TaskRow(const rpc::TaskInfo& task) {
  auto time_of = [&](rpc::TaskState state) -> int64_t {
    auto it = task.state_times_ns().find(rpc::TaskState_Name(state));
    return it == task.state_times_ns().end() ? 0 : it->second;
  };
  int64_t start = time_of(rpc::RUNNING);
  int64_t end = task.end_time_ns();
  if (end == 0) end = std::max(time_of(rpc::FINISHED), time_of(rpc::FAILED));
  return {
      {"task_id", HexOrEmpty(task.task_id())},
      {"attempt", task.attempt()},
      {"name", task.name()},
      {"state", rpc::TaskState_Name(task.state())},
      {"type", task.type()},
      {"job_id", HexOrEmpty(task.job_id())},
      {"node_id", HexOrEmpty(task.node_id())},
      {"worker_id", HexOrEmpty(task.worker_id())},
      {"worker_pid", task.worker_pid()},
      {"actor_id", HexOrEmpty(task.actor_id())},
      {"language", rpc::Language_Name(task.language())},
      {"error_type", task.has_error() ? rpc::ErrorType_Name(task.error().type()) : ""},
      {"error_message", task.has_error() ? task.error().message() : ""},
      {"start_time_ms", start / 1000000},
      {"end_time_ms", end / 1000000},
      {"duration_ms", start > 0 && end >= start ? (end - start) / 1e6 : 0.0},
      {"required_resources", MapJson(task.required_resources())},
  };
}

nlohmann::json NodeRow(const rpc::NodeInfo& node) {
  return {
      {"node_id", HexOrEmpty(node.node_id())},
      {"state", rpc::NodeInfo::State_Name(node.state())},
      {"ip", node.ip()},
      {"hostname", node.hostname()},
      {"raylet_port", node.raylet_port()},
      {"metrics_export_port", node.metrics_export_port()},
      {"resources_total", MapJson(node.resources_total())},
      {"resources_available", MapJson(node.resources_available())},
      {"object_store_used_bytes", node.object_store_used_bytes()},
      {"object_store_bytes", node.object_store_bytes()},
      {"labels", MapJson(node.labels())},
      {"start_time_ms", node.start_time_ms()},
      {"death_reason", node.death_reason()},
  };
}

nlohmann::json JobRow(const rpc::JobInfo& job) {
  return {
      {"job_id", HexOrEmpty(job.job_id())},
      {"state", job.is_dead() ? "FINISHED" : "RUNNING"},
      {"driver_ip", job.driver_ip()},
      {"driver_pid", job.driver_pid()},
      {"namespace", job.namespace_()},
      {"start_time_ms", job.start_time_ms()},
      {"end_time_ms", job.end_time_ms()},
  };
}

nlohmann::json ActorRow(const rpc::ActorInfo& actor) {
  bool alive = actor.state() == rpc::ActorInfo::ALIVE;
  return {
      {"actor_id", HexOrEmpty(actor.actor_id())},
      {"class_name", actor.class_name()},
      {"state", rpc::ActorInfo::State_Name(actor.state())},
      {"name", actor.name()},
      {"namespace", actor.namespace_()},
      {"job_id", HexOrEmpty(actor.job_id())},
      {"node_id", HexOrEmpty(actor.address().node_id())},
      {"worker_id", HexOrEmpty(actor.address().worker_id())},
      {"address", alive ? actor.address().ip() + ":" + std::to_string(actor.address().port()) : ""},
      {"num_restarts", actor.num_restarts()},
      {"max_restarts", actor.max_restarts()},
      {"detached", actor.detached()},
      {"death_reason", actor.death_reason()},
  };
}

nlohmann::json PlacementGroupRow(const rpc::PlacementGroupInfo& group) {
  nlohmann::json bundles = nlohmann::json::array();
  for (const auto& b : group.bundles()) {
    bundles.push_back({{"resources", MapJson(b.resources())}, {"node_id", HexOrEmpty(b.node_id())}});
  }
  return {
      {"placement_group_id", HexOrEmpty(group.placement_group_id())},
      {"name", group.name()},
      {"strategy", rpc::PlacementGroupInfo::Strategy_Name(group.strategy())},
      {"state", rpc::PlacementGroupInfo::State_Name(group.state())},
      {"job_id", HexOrEmpty(group.job_id())},
      {"bundles", bundles},
      {"pending_reason", group.pending_reason()},
  };
}

nlohmann::json WorkerRow(const rpc::WorkerInfo& worker, const std::string& node_id) {
  return {
      {"worker_id", HexOrEmpty(worker.worker_id())},
      {"node_id", HexOrEmpty(node_id)},
      {"state", worker.state()},
      {"pid", worker.pid()},
      {"job_id", HexOrEmpty(worker.job_id())},
      {"is_driver", worker.is_driver()},
      {"language", rpc::Language_Name(worker.language())},
      {"lease_resources", MapJson(worker.lease_resources())},
      {"port", worker.port()},
      {"start_time_ms", worker.start_time_ms()},
      {"log_file", worker.log_file()},
      // Its cgroup's limits (0: none) and what it uses, when workers run in cgroups.
      {"cpu_limit", worker.cpu_limit()},
      {"memory_limit_bytes", worker.memory_limit_bytes()},
      {"cpu_seconds", worker.cpu_seconds()},
      {"memory_bytes", worker.memory_bytes()},
  };
}

}  // namespace orb
