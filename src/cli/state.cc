// The state API on the command line: `orb list <kind>`, `orb summary tasks|actors`,
// `orb get <kind> ID`, as rows printed as a table, JSON or YAML.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "common/session.h"
#include "common/state_client.h"
#include "common/state_rows.h"

namespace orb::cli {
namespace {

// The columns a table shows (JSON and YAML show every column).
const std::vector<std::string>& TableColumns(const std::string& kind) {
  static const std::map<std::string, std::vector<std::string>> columns = {
      {"nodes", {"node_id", "state", "ip", "hostname", "metrics_export_port", "resources_total"}},
      {"jobs", {"job_id", "state", "driver_ip", "driver_pid", "namespace"}},
      {"actors", {"actor_id", "class_name", "state", "name", "address", "num_restarts", "death_reason"}},
      {"tasks", {"task_id", "name", "state", "type", "node_id", "worker_pid", "duration_ms", "error_type"}},
      {"workers",
       {"worker_id", "node_id", "state", "pid", "job_id", "lease_resources", "cpu_limit", "memory_limit_bytes",
        "cpu_seconds", "memory_bytes"}},
      {"placement-groups", {"placement_group_id", "name", "strategy", "state", "bundles"}},
      {"objects", {"object_id", "owner", "state", "size_bytes", "pinned", "spilled", "copies"}},
  };
  return columns.at(kind);
}

std::string Cell(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  if (value.is_object()) {
    std::string out;
    for (const auto& [k, v] : value.items()) out += (out.empty() ? "" : ", ") + k + ": " + Cell(v);
    return "{" + out + "}";
  }
  if (value.is_array()) {
    std::string out;
    for (const auto& v : value) out += (out.empty() ? "" : " ") + Cell(v);
    return "[" + out + "]";
  }
  return value.dump();
}

void PrintTable(const std::string& kind, const std::vector<nlohmann::json>& rows) {
  const auto& columns = TableColumns(kind);
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> widths;
  for (const auto& c : columns) {
    std::string header = c;
    std::transform(header.begin(), header.end(), header.begin(), ::toupper);
    widths.push_back(header.size());
    if (cells.empty()) cells.emplace_back();
    cells[0].push_back(header);
  }
  for (const auto& row : rows) {
    std::vector<std::string> line;
    for (size_t i = 0; i < columns.size(); ++i) {
      std::string cell = row.contains(columns[i]) ? Cell(row[columns[i]]) : "";
      if (cell.empty()) cell = "-";
      widths[i] = std::max(widths[i], std::min<size_t>(cell.size(), 60));
      line.push_back(std::move(cell));
    }
    cells.push_back(std::move(line));
  }
  for (const auto& line : cells) {
    for (size_t i = 0; i < line.size(); ++i) {
      bool last = i + 1 == line.size();
      if (last) {
        std::cout << line[i];
      } else {
        std::cout << std::left << std::setw(static_cast<int>(widths[i] + 2)) << line[i];
      }
    }
    std::cout << "\n";
  }
}

void EmitYaml(YAML::Emitter& out, const nlohmann::json& value) {
  if (value.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [k, v] : value.items()) {
      out << YAML::Key << k << YAML::Value;
      EmitYaml(out, v);
    }
    out << YAML::EndMap;
  } else if (value.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& v : value) EmitYaml(out, v);
    out << YAML::EndSeq;
  } else if (value.is_string()) {
    out << YAML::DoubleQuoted << value.get<std::string>();
  } else if (value.is_null()) {
    out << YAML::Null;
  } else {
    out << value.dump();
  }
}

void Print(const std::string& kind, const std::vector<nlohmann::json>& rows, const std::string& format) {
  if (format == "json") {
    std::cout << nlohmann::json(rows).dump(2) << "\n";
  } else if (format == "yaml") {
    YAML::Emitter out;
    EmitYaml(out, nlohmann::json(rows));
    std::cout << out.c_str() << "\n";
  } else {
    PrintTable(kind, rows);
  }
}

// The rows of `kind` (objects from the owners and stores; the rest from the GCS and
// raylets), or nothing after saying why.
std::optional<StateListing> Query(const std::string& command, const std::string& kind, const std::string& given,
                                  const std::vector<std::string>& filters, int limit) {
  std::string address = ResolveClusterAddress(given, command);
  if (address.empty()) return std::nullopt;
  absl::StatusOr<StateListing> listing;
  if (kind == "objects") {
    auto rows = ObjectRows(address);
    listing = rows.ok() ? FilterRows(kind, std::move(*rows), filters, limit) : absl::StatusOr<StateListing>(rows.status());
  } else {
    listing = QueryState(address, FindTokenForAddress(address), StateQuery{kind, filters, limit});
  }
  if (!listing.ok()) {
    std::cerr << "orb " << command << ": " << listing.status().message() << "\n";
    return std::nullopt;
  }
  for (const auto& w : listing->warnings) std::cerr << "orb " << command << ": warning: " << w << "\n";
  return std::move(*listing);
}

}  // namespace

std::string ResolveClusterAddress(const std::string& given, const std::string& command) {
  std::string address = given.empty() ? FindLocalClusterAddress() : given;
  if (address.empty()) std::cerr << "orb " << command << ": no running local cluster found; pass --address HOST:PORT\n";
  return address;
}

int List(const ListOptions& options) {
  auto listing = Query("list", options.kind, options.address, options.filters, options.limit);
  if (!listing) return 1;
  Print(options.kind, listing->rows, options.format);
  if (listing->total > static_cast<int64_t>(listing->rows.size())) {
    std::cerr << "(" << listing->rows.size() << " of " << listing->total << " shown; raise --limit to see more)\n";
  }
  return 0;
}

int Summary(const std::string& kind, const std::string& address, const std::string& format) {
  auto listing = Query("summary", kind, address, {}, 0);
  if (!listing) return 1;
  // By function (tasks) or class (actors): how many are in each state.
  std::string group_by = kind == "tasks" ? "name" : "class_name";
  std::map<std::string, std::map<std::string, int64_t>> counts;
  for (const auto& row : listing->rows) ++counts[Cell(row[group_by])][Cell(row["state"])];
  std::vector<nlohmann::json> rows;
  for (const auto& [name, states] : counts) {
    int64_t total = 0;
    for (const auto& [state, n] : states) total += n;
    rows.push_back({{group_by, name}, {"total", total}, {"states", states}});
  }
  if (format != "table") {
    Print(kind, rows, format);
    return 0;
  }
  std::cout << "======== " << (kind == "tasks" ? "Tasks" : "Actors") << " summary: " << listing->rows.size()
            << " ========\n";
  std::cout << std::left << std::setw(40) << (kind == "tasks" ? "NAME" : "CLASS") << std::setw(8) << "TOTAL"
            << "STATES\n";
  for (const auto& row : rows) {
    std::cout << std::left << std::setw(40) << Cell(row[group_by]) << std::setw(8) << row["total"].dump()
              << Cell(row["states"]) << "\n";
  }
  return 0;
}

int Get(const std::string& kind, const std::string& id, const std::string& address, const std::string& format) {
  static const std::map<std::string, std::string> id_columns = {
      {"nodes", "node_id"},   {"jobs", "job_id"},       {"actors", "actor_id"},
      {"tasks", "task_id"},   {"workers", "worker_id"}, {"placement-groups", "placement_group_id"},
      {"objects", "object_id"}};
  std::string plural = kind.back() == 's' ? kind : kind == "placement-group" ? "placement-groups" : kind + "s";
  auto column = id_columns.find(plural);
  if (column == id_columns.end()) {
    std::cerr << "orb get: unknown kind '" << kind << "' (known: node, job, actor, task, worker, placement-group, object)\n";
    return 2;
  }
  auto listing = Query("get", plural, address, {column->second + "=" + id}, 0);
  if (!listing) return 1;
  if (listing->rows.empty()) {
    std::cerr << "orb get: no " << kind << " with ID " << id << "\n";
    return 1;
  }
  if (format == "json") {
    std::cout << nlohmann::json(listing->rows.size() == 1 ? listing->rows[0] : nlohmann::json(listing->rows)).dump(2)
              << "\n";
    return 0;
  }
  YAML::Emitter out;
  EmitYaml(out, listing->rows.size() == 1 ? listing->rows[0] : nlohmann::json(listing->rows));
  std::cout << out.c_str() << "\n";
  return 0;
}

}  // namespace orb::cli
