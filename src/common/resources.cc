#include "common/resources.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace orb {

namespace {

// Clamped to ±kMaxAmount (NaN: 0), so that no amount converts with undefined behaviour.
int64_t ToFixed(double amount) {
  if (!(amount == amount)) return 0;
  amount = std::clamp(amount, -ResourceSet::kMaxAmount, ResourceSet::kMaxAmount);
  return static_cast<int64_t>(std::llround(amount * ResourceSet::kUnit));
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

int64_t SaturatingNegate(int64_t a) { return a == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -a; }

}  // namespace

ResourceSet ResourceSet::FromMap(const std::map<std::string, double>& amounts) {
  ResourceSet set;
  for (const auto& [name, amount] : amounts) set.Set(name, amount);
  return set;
}

absl::Status ResourceSet::Validate(const std::map<std::string, double>& amounts) {
  for (const auto& [name, amount] : amounts) {
    if (name.empty()) return absl::InvalidArgumentError("resource name is empty");
    if (!std::isfinite(amount) || amount < 0 || amount > kMaxAmount) {
      std::ostringstream os;
      os << "resource '" << name << "' has invalid amount " << amount << " (must be a finite number from 0 to "
         << kMaxAmount << ")";
      return absl::InvalidArgumentError(os.str());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ResourceSet> ResourceSet::ParseJson(const std::string& json) {
  nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InvalidArgumentError("resources must be a JSON object such as '{\"GPU\": 1, \"zone_a\": 4}', got: " + json);
  }
  std::map<std::string, double> amounts;
  for (const auto& [name, value] : parsed.items()) {
    if (!value.is_number()) {
      return absl::InvalidArgumentError("resource '" + name + "' must be a number, got " + value.dump());
    }
    amounts[name] = value.get<double>();
  }
  if (auto status = Validate(amounts); !status.ok()) return status;
  return FromMap(amounts);
}

namespace {

struct NameTable {
  std::mutex mu;
  std::unordered_map<std::string, int> ids;
  std::vector<std::string> names;
};

NameTable& Names() {
  static NameTable* table = new NameTable();  // never destroyed: used from any thread at exit
  return *table;
}

const std::string& NameOf(int id) {
  NameTable& t = Names();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.names[static_cast<size_t>(id)];
}

}  // namespace

int ResourceSet::IdOf(const std::string& name) {
  NameTable& t = Names();
  std::lock_guard<std::mutex> lock(t.mu);
  auto [it, inserted] = t.ids.emplace(name, static_cast<int>(t.names.size()));
  if (inserted) t.names.push_back(name);
  return it->second;
}

std::vector<std::pair<int, int64_t>>::iterator ResourceSet::Find(int id) {
  return std::lower_bound(amounts_.begin(), amounts_.end(), std::make_pair(id, std::numeric_limits<int64_t>::min()));
}

std::map<std::string, double> ResourceSet::ToMap() const {
  std::map<std::string, double> m;
  for (const auto& [id, fixed] : amounts_) m[NameOf(id)] = static_cast<double>(fixed) / kUnit;
  return m;
}

double ResourceSet::GetById(int id) const {
  auto it = std::lower_bound(amounts_.begin(), amounts_.end(), std::make_pair(id, std::numeric_limits<int64_t>::min()));
  return it != amounts_.end() && it->first == id ? static_cast<double>(it->second) / kUnit : 0.0;
}

double ResourceSet::Get(const std::string& name) const { return GetById(IdOf(name)); }

void ResourceSet::Set(const std::string& name, double amount) {
  int id = IdOf(name);
  int64_t fixed = ToFixed(amount);
  auto it = Find(id);
  bool present = it != amounts_.end() && it->first == id;
  if (fixed == 0) {
    if (present) amounts_.erase(it);
  } else if (present) {
    it->second = fixed;
  } else {
    amounts_.insert(it, {id, fixed});
  }
}

bool ResourceSet::Contains(const ResourceSet& request) const {
  // Both sides are sorted by ID: one merge walk.
  auto mine = amounts_.begin();
  for (const auto& [id, fixed] : request.amounts_) {
    while (mine != amounts_.end() && mine->first < id) ++mine;
    if (mine == amounts_.end() || mine->first != id || mine->second < fixed) return false;
  }
  return true;
}

void ResourceSet::Add(const ResourceSet& other) {
  for (const auto& [id, fixed] : other.amounts_) {
    auto it = Find(id);
    if (it != amounts_.end() && it->first == id) {
      it->second = SaturatingAdd(it->second, fixed);
      if (it->second == 0) amounts_.erase(it);
    } else {
      amounts_.insert(it, {id, fixed});
    }
  }
}

void ResourceSet::Subtract(const ResourceSet& other) {
  for (const auto& [id, fixed] : other.amounts_) {
    auto it = Find(id);
    if (it != amounts_.end() && it->first == id) {
      it->second = SaturatingAdd(it->second, SaturatingNegate(fixed));
      if (it->second == 0) amounts_.erase(it);
    } else {
      amounts_.insert(it, {id, SaturatingNegate(fixed)});
    }
  }
}

std::string ResourceSet::ToString() const {
  std::ostringstream os;
  os << "{";
  bool first = true;
  for (const auto& [name, amount] : ToMap()) {
    os << (first ? "" : ", ") << name << ": " << amount;
    first = false;
  }
  os << "}";
  return os.str();
}

std::string PlacementGroupResourceName(const std::string& resource, const std::string& pg_hex, int bundle_index) {
  if (bundle_index < 0) return resource + "_group_" + pg_hex;
  return resource + "_group_" + std::to_string(bundle_index) + "_" + pg_hex;
}

}  // namespace orb
