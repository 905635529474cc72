#include "dashboard/dashboard.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <sstream>

#include "common/client_pool.h"
#include "common/id.h"
#include "common/node_types.h"
#include "common/rpc.h"
#include "common/state_client.h"
#include "common/state_rows.h"
#include "common/unix_time.h"
#include "dashboard/dashboard_assets.h"
#include "gcs_service.grpc.pb.h"
#include "raylet_service.grpc.pb.h"

namespace orb {
namespace {

HttpResponse Json(const nlohmann::json& body, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = body.dump();
  return r;
}

HttpResponse Error(int status, const std::string& message) { return Json({{"error", message}}, status); }

HttpResponse Asset(const char* body, const char* type) {
  HttpResponse r;
  r.content_type = type;
  r.body = body;
  return r;
}

std::string Param(const HttpRequest& req, const std::string& name, const std::string& otherwise = "") {
  auto it = req.params.find(name);
  return it == req.params.end() ? otherwise : it->second;
}

class Api {
 public:
  explicit Api(DashboardOptions options)
      : options_(std::move(options)), raylets_(options_.token), gcs_(options_.gcs_address, options_.token) {}

  HttpResponse Serve(const HttpRequest& req) {
    if (!Authorized(req)) {
      return Error(401, "the dashboard's API needs the cluster token: open the dashboard at /?token=TOKEN");
    }
    std::string path = req.path.substr(std::string("/api/").size());
    if (path.rfind("list/", 0) == 0) return List(path.substr(5), req);
    if (path == "summary") return Summary();
    if (path.rfind("logs/", 0) == 0) return LogFiles(path.substr(5));
    if (path == "log") return ReadLog(req);
    if (path == "autoscaler") return Autoscaler();
    return Error(404, "no such API: /api/" + path);
  }

 private:
  bool Authorized(const HttpRequest& req) const {
    if (options_.token.empty()) return true;
    std::string given = Param(req, "token");
    auto header = req.headers.find("authorization");
    if (header != req.headers.end() && header->second.rfind("Bearer ", 0) == 0) given = header->second.substr(7);
    return given == options_.token || (!options_.read_only_token.empty() && given == options_.read_only_token);
  }

  absl::StatusOr<StateListing> Query(const std::string& kind, const std::vector<std::string>& filters, int limit) {
    return QueryState(options_.gcs_address, options_.token, StateQuery{kind, filters, limit});
  }

  HttpResponse List(const std::string& kind, const HttpRequest& req) {
    std::vector<std::string> filters;
    std::istringstream lines(Param(req, "filters"));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) filters.push_back(line);
    }
    int limit = std::atoi(Param(req, "limit", "1000").c_str());
    auto listing = Query(kind, filters, limit);
    if (!listing.ok()) return Error(absl::IsInvalidArgument(listing.status()) ? 400 : 503, std::string(listing.status().message()));
    return Json({{"rows", listing->rows}, {"total", listing->total}, {"warnings", listing->warnings}});
  }

  // What the overview and the charts need in one call: the nodes, and how many tasks,
  // actors, jobs and placement groups are in each state.
  HttpResponse Summary() {
    auto nodes = Query("nodes", {}, 0);
    if (!nodes.ok()) return Error(503, std::string(nodes.status().message()));
    nlohmann::json out = {{"nodes", nodes->rows},
                          {"time_ms", UnixMillis()}};
    for (const char* state : {"PENDING_NODE_ASSIGNMENT", "SUBMITTED_TO_WORKER", "RUNNING", "FINISHED", "FAILED"}) {
      auto tasks = Query("tasks", {std::string("state=") + state}, 1);
      out["tasks"][state] = tasks.ok() ? tasks->total : 0;
    }
    for (const auto& [kind, key] : std::map<std::string, std::string>{
             {"actors", "actors"}, {"jobs", "jobs"}, {"placement-groups", "placement_groups"}}) {
      out[key] = nlohmann::json::object();
      auto rows = Query(kind, {}, 0);
      if (!rows.ok()) continue;
      for (const auto& row : rows->rows) out[key][row["state"].get<std::string>()] = out[key].value(row["state"].get<std::string>(), 0) + 1;
    }
    return Json(out);
  }

  // The raylet of node `node_hex`, or null when it is not alive.
  std::shared_ptr<RpcClient<rpc::RayletService>> RayletOf(const std::string& node_hex) {
    auto nodes = Query("nodes", {"node_id=" + node_hex, "state=ALIVE"}, 1);
    if (!nodes.ok() || nodes->rows.empty()) return nullptr;
    const auto& n = nodes->rows[0];
    return raylets_.Get(n["ip"].get<std::string>() + ":" + std::to_string(n["raylet_port"].get<int>()));
  }

  HttpResponse LogFiles(const std::string& node_hex) {
    auto raylet = RayletOf(node_hex);
    if (!raylet) return Error(404, "no live node " + node_hex);
    auto reply = raylet->CallSync<rpc::ListLogsReply>(ORB_RPC(ListLogs), rpc::ListLogsRequest(), Quick());
    if (!reply.ok()) return Error(503, std::string(reply.status().message()));
    nlohmann::json files = nlohmann::json::array();
    for (const auto& f : reply->files()) files.push_back({{"name", f.name()}, {"size", f.size()}, {"modified_ms", f.modified_ms()}});
    return Json({{"files", files}});
  }

  HttpResponse ReadLog(const HttpRequest& req) {
    auto raylet = RayletOf(Param(req, "node_id"));
    if (!raylet) return Error(404, "no live node " + Param(req, "node_id"));
    rpc::ReadLogRequest request;
    request.set_name(Param(req, "name"));
    request.set_offset(std::atoll(Param(req, "offset", "0").c_str()));
    request.set_max_bytes(std::atoll(Param(req, "max_bytes", "0").c_str()));
    auto reply = raylet->CallSync<rpc::ReadLogReply>(ORB_RPC(ReadLog), request, Quick());
    if (!reply.ok()) return Error(absl::IsNotFound(reply.status()) ? 404 : 400, std::string(reply.status().message()));
    // Logs are text; bytes that are not UTF-8 would make the JSON invalid.
    std::string data = nlohmann::json(reply->data()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return Json({{"data", nlohmann::json::parse(data)}, {"offset", reply->offset()}, {"next_offset", reply->next_offset()},
                 {"size", reply->size()}});
  }

  // The autoscaler's view as it last published it (nodes, pending launches, what cannot
  // be placed, its decisions with their reasons) and the node types it may launch;
  // null for what is not there (no autoscaler runs).
  HttpResponse Autoscaler() {
    nlohmann::json out = {{"status", nullptr}, {"node_types", nullptr}};
    for (const auto& [field, key] : std::map<std::string, std::string>{{"status", kAutoscalerStatusKvKey},
                                                                        {"node_types", kNodeTypesKvKey}}) {
      rpc::KvGetRequest get;
      get.set_namespace_(kNodeTypesKvNamespace);
      get.set_key(key);
      auto reply = gcs_.CallSync<rpc::KvGetReply>(ORB_RPC(KvGet), get, Quick());
      if (!reply.ok()) return Error(503, std::string(reply.status().message()));
      if (!reply->found()) continue;
      auto json = nlohmann::json::parse(reply->value(), nullptr, /*allow_exceptions=*/false);
      if (!json.is_discarded()) out[field] = std::move(json);
    }
    return Json(out);
  }

  static CallOptions Quick() {
    CallOptions call;
    call.timeout = std::chrono::milliseconds(5000);
    return call;
  }

  DashboardOptions options_;
  ClientPool<rpc::RayletService> raylets_;
  RpcClient<rpc::GcsService> gcs_;
};

}  // namespace

void AddDashboardRoutes(HttpEndpoint* endpoint, const DashboardOptions& options) {
  endpoint->Get("/app.js", [](const HttpRequest&) { return Asset(dashboard_assets::kAppJs, "text/javascript; charset=utf-8"); });
  endpoint->Get("/style.css", [](const HttpRequest&) { return Asset(dashboard_assets::kStyleCss, "text/css; charset=utf-8"); });
  auto api = std::make_shared<Api>(options);
  endpoint->Get("/api/", [api](const HttpRequest& req) { return api->Serve(req); });
  // Last: "/" matches every path the routes above did not take.
  endpoint->Get("/", [](const HttpRequest& req) {
    if (req.path != "/" && req.path != "/index.html") return Error(404, "no such page: " + req.path);
    return Asset(dashboard_assets::kIndexHtml, "text/html; charset=utf-8");
  });
}

}  // namespace orb
