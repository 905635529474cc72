// The object rows of `orb list objects`, and `orb memory`: every object of the cluster, joined from what its
// owner says (state, size, references by kind) and what each node's store holds (copies,
// pins, spill files).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "cli/commands.h"
#include "common/client_pool.h"
#include "common/id.h"
#include "common/rpc.h"
#include "common/session.h"
#include "core_worker_service.grpc.pb.h"
#include "gcs_service.grpc.pb.h"
#include "raylet_service.grpc.pb.h"

namespace orb::cli {
namespace {

struct Copy {
  std::string node;  // hex
  bool primary = false;
  int pins = 0;
  bool spilled = false;
  bool in_memory = false;
  int64_t size = 0;
};

struct Row {
  std::string id;
  std::string owner = "?";  // "ip:port"; "?" when no live process owns it
  std::string state = "UNKNOWN_OWNER";
  int64_t size = 0;
  std::vector<Copy> copies;
  int local = 0, submitted = 0, borrowers = 0, captured = 0, lineage = 0;
  bool reconstructable = false;
  std::string error;
};

struct NodeStore {
  std::string node;  // hex
  std::string address;
  int64_t used = 0, capacity = 0, objects = 0, spilled_bytes = 0, spilled_objects = 0;
  std::vector<rpc::SpillDirectoryStats> spill_directories;
};

struct Snapshot {
  std::vector<Row> rows;
  std::vector<NodeStore> stores;
  std::map<std::string, bool> owners;  // address -> is driver
};

std::string Bytes(int64_t n) {
  char buf[32];
  if (n >= (1ll << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2fGiB", n / double(1ll << 30));
  } else if (n >= (1 << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1fMiB", n / double(1 << 20));
  } else if (n >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.1fKiB", n / 1024.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%lldB", static_cast<long long>(n));
  }
  return buf;
}

const char* StateName(rpc::OwnedObjectInfo::State s) {
  switch (s) {
    case rpc::OwnedObjectInfo::PENDING: return "PENDING";
    case rpc::OwnedObjectInfo::INLINE: return "INLINE";
    case rpc::OwnedObjectInfo::IN_STORE: return "IN_STORE";
    case rpc::OwnedObjectInfo::ERROR: return "ERROR";
    case rpc::OwnedObjectInfo::RELEASED: return "RELEASED";
    default: return "?";
  }
}

// Asks the GCS for the nodes, each raylet for its store and processes, and each process
// for what it owns. Processes that do not answer (exiting) are left out.
absl::StatusOr<Snapshot> Collect(const std::string& address) {
  std::string token = FindTokenForAddress(address);
  RpcClient<rpc::GcsService> gcs(address, token);
  CallOptions call;
  call.timeout = std::chrono::milliseconds(5000);
  auto nodes = gcs.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest(), call);
  if (!nodes.ok()) return absl::UnavailableError("cannot reach the GCS at " + address + ": " + std::string(nodes.status().message()));
  ClientPool<rpc::RayletService> raylets(token);
  ClientPool<rpc::CoreWorkerService> workers(token);
  Snapshot snap;
  std::map<std::string, std::vector<Copy>> copies;       // object hex -> copies
  std::map<std::string, std::string> owner_of_copy;      // object hex -> owner worker (hex), if known
  std::vector<std::string> worker_addresses;
  for (const auto& n : nodes->nodes()) {
    if (n.state() != rpc::NodeInfo::ALIVE) continue;
    std::string raylet = n.ip() + ":" + std::to_string(n.raylet_port());
    auto client = raylets.Get(raylet);
    auto listed = client->CallSync<rpc::ListStoreObjectsReply>(ORB_RPC(ListStoreObjects), rpc::ListStoreObjectsRequest(), call);
    if (!listed.ok()) continue;
    NodeStore store;
    store.node = NodeID::FromBinary(n.node_id()).Hex();
    store.address = raylet;
    auto stats = client->CallSync<rpc::GetNodeStatsReply>(ORB_RPC(GetNodeStats), rpc::GetNodeStatsRequest(), call);
    if (stats.ok()) {
      store.used = stats->object_store_used_bytes();
      store.capacity = stats->object_store_bytes();
      store.objects = stats->num_objects();
      auto metric = [&](const char* name) {
        auto it = stats->metrics().find(name);
        return it == stats->metrics().end() ? int64_t{0} : it->second;
      };
      store.spilled_bytes = metric("object_spilled_bytes_on_disk");
      store.spilled_objects = metric("object_spilled_objects_on_disk");
      store.spill_directories.assign(stats->spill_directories().begin(), stats->spill_directories().end());
    }
    snap.stores.push_back(store);
    for (const auto& o : listed->objects()) {
      if (!o.sealed()) continue;
      std::string id = ObjectID::FromBinary(o.object_id()).Hex();
      copies[id].push_back({store.node, o.primary(), o.pins(), o.spilled(), o.in_memory(), o.size()});
      if (!o.owner_worker_id().empty()) owner_of_copy[id] = WorkerID::FromBinary(o.owner_worker_id()).Hex();
    }
    for (const auto& w : listed->workers()) worker_addresses.push_back(w.ip() + ":" + std::to_string(w.port()));
  }
  std::set<std::string> listed_ids;
  for (const auto& w : worker_addresses) {
    auto owned = workers.Get(w)->CallSync<rpc::ListOwnedObjectsReply>(ORB_RPC(ListOwnedObjects),
                                                                      rpc::ListOwnedObjectsRequest(), call);
    if (!owned.ok()) continue;
    snap.owners[w] = owned->is_driver();
    for (const auto& o : owned->owned()) {
      Row row;
      row.id = ObjectID::FromBinary(o.object_id()).Hex();
      row.owner = w;
      row.state = StateName(o.state());
      row.size = o.size();
      row.local = o.local_refs();
      row.submitted = o.submitted_task_refs();
      row.borrowers = o.borrowers();
      row.captured = o.captured_refs();
      row.lineage = o.lineage_refs();
      row.reconstructable = o.reconstructable();
      row.error = o.error();
      auto c = copies.find(row.id);
      if (c != copies.end()) row.copies = c->second;
      listed_ids.insert(row.id);
      snap.rows.push_back(std::move(row));
    }
  }
  // Copies no live process claims (their owner is gone: freed once unpinned).
  for (const auto& [id, cs] : copies) {
    if (listed_ids.count(id)) continue;
    Row row;
    row.id = id;
    row.copies = cs;
    row.size = cs.front().size;
    if (owner_of_copy.count(id)) row.owner = "worker " + owner_of_copy[id].substr(0, 8);
    snap.rows.push_back(std::move(row));
  }
  return snap;
}

std::string Nodes(const Row& row) {
  std::string out;
  for (const auto& c : row.copies) {
    if (!out.empty()) out += ",";
    out += c.node.substr(0, 8) + (c.primary ? "*" : "") + (c.spilled && !c.in_memory ? "(disk)" : "");
  }
  return out.empty() ? "-" : out;
}

int Pins(const Row& row) {
  int n = 0;
  for (const auto& c : row.copies) n += c.pins;
  return n;
}

bool Spilled(const Row& row) {
  for (const auto& c : row.copies) {
    if (c.spilled) return true;
  }
  return false;
}

nlohmann::json ToJson(const Row& row) {
  nlohmann::json copies = nlohmann::json::array();
  for (const auto& c : row.copies) {
    copies.push_back({{"node_id", c.node}, {"primary", c.primary}, {"pins", c.pins}, {"spilled", c.spilled},
                      {"in_memory", c.in_memory}});
  }
  nlohmann::json j = {{"object_id", row.id},
                      {"owner", row.owner},
                      {"state", row.state},
                      {"size_bytes", row.size},
                      {"copies", copies},
                      {"references",
                       {{"local", row.local},
                        {"submitted_task", row.submitted},
                        {"borrower", row.borrowers},
                        {"captured_in_object", row.captured},
                        {"lineage", row.lineage}}},
                      {"pinned", Pins(row) > 0},
                      {"spilled", Spilled(row)},
                      {"reconstructable", row.reconstructable}};
  if (!row.error.empty()) j["error"] = row.error;
  return j;
}

void PrintTable(const std::vector<Row>& rows) {
  std::cout << std::left << std::setw(42) << "OBJECT_ID" << std::setw(22) << "OWNER" << std::setw(14) << "STATE"
            << std::setw(10) << "SIZE" << std::setw(6) << "LOCAL" << std::setw(6) << "TASK" << std::setw(9)
            << "BORROWER" << std::setw(9) << "CAPTURED" << std::setw(7) << "PINNED" << std::setw(8) << "SPILLED"
            << "NODES (* primary)\n";
  for (const auto& r : rows) {
    std::cout << std::left << std::setw(42) << r.id << std::setw(22) << r.owner << std::setw(14) << r.state
              << std::setw(10) << Bytes(r.size) << std::setw(6) << r.local << std::setw(6) << r.submitted
              << std::setw(9) << r.borrowers << std::setw(9) << r.captured << std::setw(7)
              << (Pins(r) > 0 ? "yes" : "no") << std::setw(8) << (Spilled(r) ? "yes" : "no") << Nodes(r) << "\n";
  }
}

// The snapshot for `orb <command>`; nothing (after saying why) when it cannot be had.
std::optional<Snapshot> CollectFor(const std::string& given_address, const std::string& command) {
  std::string address = ResolveClusterAddress(given_address, command);
  if (address.empty()) return std::nullopt;
  auto snap = Collect(address);
  if (!snap.ok()) {
    std::cerr << "orb " << command << ": " << snap.status().message() << "\n";
    return std::nullopt;
  }
  return std::move(*snap);
}

}  // namespace

absl::StatusOr<std::vector<nlohmann::json>> ObjectRows(const std::string& address) {
  auto snap = Collect(address);
  if (!snap.ok()) return snap.status();
  std::vector<nlohmann::json> rows;
  for (const auto& r : snap->rows) rows.push_back(ToJson(r));
  return rows;
}

int Memory(const std::string& given_address, const std::string& format) {
  auto snap = CollectFor(given_address, "memory");
  if (!snap) return 1;
  if (format == "json") {
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& s : snap->stores) {
      nlohmann::json dirs = nlohmann::json::array();
      for (const auto& d : s.spill_directories) {
        dirs.push_back({{"path", d.path()}, {"spilled_bytes", d.spilled_bytes()}, {"files", d.files()},
                        {"filesystem_free_bytes", d.filesystem_free_bytes()},
                        {"filesystem_total_bytes", d.filesystem_total_bytes()}, {"failures_total", d.failures_total()},
                        {"last_error", d.last_error()}});
      }
      nodes.push_back({{"node_id", s.node}, {"address", s.address}, {"used_bytes", s.used}, {"capacity_bytes", s.capacity},
                       {"objects", s.objects}, {"spilled_bytes", s.spilled_bytes}, {"spilled_objects", s.spilled_objects},
                       {"spill_directories", dirs}});
    }
    nlohmann::json objects = nlohmann::json::array();
    for (const auto& r : snap->rows) objects.push_back(ToJson(r));
    std::cout << nlohmann::json{{"nodes", nodes}, {"objects", objects}}.dump(2) << "\n";
    return 0;
  }
  std::cout << "======== Object stores ========\n"
            << std::left << std::setw(10) << "NODE" << std::setw(22) << "USED / CAPACITY" << std::setw(9) << "OBJECTS"
            << "SPILLED (objects, bytes on disk)\n";
  for (const auto& s : snap->stores) {
    std::cout << std::left << std::setw(10) << s.node.substr(0, 8) << std::setw(22)
              << (Bytes(s.used) + " / " + Bytes(s.capacity)) << std::setw(9) << s.objects << s.spilled_objects << ", "
              << Bytes(s.spilled_bytes) << "\n";
  }
  std::cout << "\n======== Spill directories ========\n"
            << std::left << std::setw(10) << "NODE" << std::setw(12) << "SPILLED" << std::setw(7) << "FILES"
            << std::setw(24) << "FILESYSTEM FREE / SIZE" << std::setw(10) << "FAILURES" << "DIRECTORY\n";
  for (const auto& s : snap->stores) {
    for (const auto& d : s.spill_directories) {
      std::string fs = d.filesystem_total_bytes() < 0
                           ? "unreadable"
                           : Bytes(d.filesystem_free_bytes()) + " / " + Bytes(d.filesystem_total_bytes());
      std::cout << std::left << std::setw(10) << s.node.substr(0, 8) << std::setw(12) << Bytes(d.spilled_bytes())
                << std::setw(7) << d.files() << std::setw(24) << fs << std::setw(10) << d.failures_total() << d.path()
                << (d.last_error().empty() ? "" : "\n          last failure: " + d.last_error()) << "\n";
    }
  }
  // By owner, as `ray memory` groups by process.
  std::map<std::string, std::vector<Row>> by_owner;
  for (const auto& r : snap->rows) by_owner[r.owner].push_back(r);
  std::cout << "\n======== Objects by owner ========\n";
  for (const auto& [owner, rows] : by_owner) {
    int64_t total = 0;
    for (const auto& r : rows) total += r.size;
    auto kind = snap->owners.find(owner);
    std::cout << "--- " << owner
              << (kind == snap->owners.end() ? " (no live owner)" : kind->second ? " (driver)" : " (worker)") << ": "
              << rows.size() << " object(s), " << Bytes(total) << "\n";
    PrintTable(rows);
  }
  return 0;
}

}  // namespace orb::cli
