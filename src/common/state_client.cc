#include "common/state_client.h"

#include <algorithm>

#include "common/client_pool.h"
#include "common/rpc.h"
#include "common/state_filter.h"
#include "common/state_rows.h"
#include "gcs_service.grpc.pb.h"
#include "raylet_service.grpc.pb.h"

namespace orb {
namespace {

CallOptions Quick() {
  CallOptions call;
  call.timeout = std::chrono::milliseconds(5000);
  return call;
}

absl::Status Unreachable(const std::string& address, const absl::Status& status) {
  return absl::UnavailableError("cannot reach the GCS at " + address + ": " + std::string(status.message()));
}

// Every row of `kind` but tasks, unfiltered.
absl::StatusOr<StateListing> ReadAll(RpcClient<rpc::GcsService>& gcs, const std::string& address,
                                     const std::string& token, const std::string& kind) {
  StateListing listing;
  if (kind == "nodes" || kind == "workers") {
    auto nodes = gcs.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest(), Quick());
    if (!nodes.ok()) return Unreachable(address, nodes.status());
    if (kind == "nodes") {
      for (const auto& n : nodes->nodes()) listing.rows.push_back(NodeRow(n));
      return listing;
    }
    ClientPool<rpc::RayletService> raylets(token);
    for (const auto& n : nodes->nodes()) {
      if (n.state() != rpc::NodeInfo::ALIVE) continue;
      std::string raylet = n.ip() + ":" + std::to_string(n.raylet_port());
      auto workers = raylets.Get(raylet)->CallSync<rpc::ListWorkersReply>(ORB_RPC(ListWorkers),
                                                                          rpc::ListWorkersRequest(), Quick());
      if (!workers.ok()) {
        listing.warnings.push_back("node " + HexOrEmpty(n.node_id()) + " (" + raylet +
                                   ") did not answer: " + std::string(workers.status().message()));
        continue;
      }
      for (const auto& w : workers->workers()) listing.rows.push_back(WorkerRow(w, n.node_id()));
    }
    return listing;
  }
  if (kind == "jobs") {
    auto jobs = gcs.CallSync<rpc::GetAllJobsReply>(ORB_RPC(GetAllJobs), rpc::GetAllJobsRequest(), Quick());
    if (!jobs.ok()) return Unreachable(address, jobs.status());
    for (const auto& j : jobs->jobs()) listing.rows.push_back(JobRow(j));
    return listing;
  }
  if (kind == "actors") {
    auto actors = gcs.CallSync<rpc::ListActorsReply>(ORB_RPC(ListActors), rpc::ListActorsRequest(), Quick());
    if (!actors.ok()) return Unreachable(address, actors.status());
    for (const auto& a : actors->actors()) listing.rows.push_back(ActorRow(a));
    return listing;
  }
  if (kind == "placement-groups") {
    auto groups = gcs.CallSync<rpc::ListPlacementGroupsReply>(ORB_RPC(ListPlacementGroups),
                                                              rpc::ListPlacementGroupsRequest(), Quick());
    if (!groups.ok()) return Unreachable(address, groups.status());
    for (const auto& g : groups->placement_groups()) listing.rows.push_back(PlacementGroupRow(g));
    return listing;
  }
  std::string known;
  for (const auto& k : StateKinds()) known += (known.empty() ? "" : ", ") + k;
  return absl::InvalidArgumentError("unknown kind '" + kind + "' (known: " + known + ")");
}

}  // namespace

absl::StatusOr<StateListing> FilterRows(const std::string& kind, std::vector<nlohmann::json> rows,
                                        const std::vector<std::string>& filter_texts, int limit) {
  auto filters = ParseStateFilters(filter_texts);
  if (!filters.ok()) return filters.status();
  if (auto s = CheckFilterKeys(*filters, StateColumns(kind)); !s.ok()) return s;
  StateListing listing;
  for (auto& row : rows) {
    if (!MatchesStateFilters(row, *filters)) continue;
    ++listing.total;
    if (limit > 0 && static_cast<int>(listing.rows.size()) >= limit) continue;
    listing.rows.push_back(std::move(row));
  }
  return listing;
}

absl::StatusOr<StateListing> QueryState(const std::string& address, const std::string& token,
                                        const StateQuery& query) {
  RpcClient<rpc::GcsService> gcs(address, token);
  if (query.kind == "tasks") {
    rpc::ListTasksRequest request;
    for (const auto& f : query.filters) request.add_filters(f);
    request.set_limit(std::max(0, query.limit));
    auto reply = gcs.CallSync<rpc::ListTasksReply>(ORB_RPC(ListTasks), request, Quick());
    if (!reply.ok()) {
      if (absl::IsInvalidArgument(reply.status())) return reply.status();
      return Unreachable(address, reply.status());
    }
    StateListing listing;
    for (const auto& t : reply->tasks()) listing.rows.push_back(TaskRow(t));
    listing.total = reply->total();
    if (reply->dropped_events() > 0) {
      listing.warnings.push_back(std::to_string(reply->dropped_events()) +
                                 " task events were dropped (buffers full or history bound): some tasks may be "
                                 "missing or show an earlier state");
    }
    return listing;
  }
  auto all = ReadAll(gcs, address, token, query.kind);
  if (!all.ok()) return all.status();
  auto listing = FilterRows(query.kind, std::move(all->rows), query.filters, query.limit);
  if (!listing.ok()) return listing.status();
  listing->warnings = std::move(all->warnings);
  return listing;
}

absl::StatusOr<rpc::ListTasksReply> FetchTaskHistory(const std::string& address, const std::string& token) {
  RpcClient<rpc::GcsService> gcs(address, token);
  rpc::ListTasksRequest request;
  request.set_include_transfers(true);
  auto reply = gcs.CallSync<rpc::ListTasksReply>(ORB_RPC(ListTasks), request, Quick());
  if (!reply.ok()) return Unreachable(address, reply.status());
  return reply;
}

}  // namespace orb
