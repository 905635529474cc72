// The rows of the state API (`orb list <kind>`, orb::state, the GCS's task filters): each
// kind's records as flat JSON objects with fixed columns, hex IDs and state names, so
// that one filter syntax and one set of printers (table, JSON, YAML) serve them all.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "common.pb.h"
#include "gcs_service.pb.h"
#include "raylet_service.pb.h"

namespace orb {

// The kinds of rows: nodes, jobs, actors, tasks, workers, placement-groups, objects.
const std::vector<std::string>& StateKinds();
// The columns of `kind`, in the order tables show them; empty for an unknown kind.
const std::vector<std::string>& StateColumns(const std::string& kind);
const std::vector<std::string>& TaskColumns();

nlohmann::json TaskRow(const rpc::TaskInfo& task);
nlohmann::json NodeRow(const rpc::NodeInfo& node);
nlohmann::json JobRow(const rpc::JobInfo& job);
nlohmann::json ActorRow(const rpc::ActorInfo& actor);
nlohmann::json PlacementGroupRow(const rpc::PlacementGroupInfo& group);
// A worker of the node `node_id` (binary).
nlohmann::json WorkerRow(const rpc::WorkerInfo& worker, const std::string& node_id);

// Hex of an ID's bytes; "" when empty.
std::string HexOrEmpty(const std::string& binary);

}  // namespace orb
