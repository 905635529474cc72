#include "common/resources.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

namespace orb {

static int64_t ToFixed(double amount) { return static_cast<int64_t>(std::llround(amount * ResourceSet::kUnit)); }

ResourceSet ResourceSet::FromMap(const std::map<std::string, double>& amounts) {
  ResourceSet set;
  for (const auto& [name, amount] : amounts) set.Set(name, amount);
  return set;
}

absl::Status ResourceSet::Validate(const std::map<std::string, double>& amounts) {
  for (const auto& [name, amount] : amounts) {
    if (name.empty()) return absl::InvalidArgumentError("resource name is empty");
    if (!std::isfinite(amount) || amount < 0) {
      std::ostringstream os;
      os << "resource '" << name << "' has invalid amount " << amount << " (must be a finite number >= 0)";
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

std::map<std::string, double> ResourceSet::ToMap() const {
  std::map<std::string, double> m;
  for (const auto& [name, fixed] : amounts_) m[name] = static_cast<double>(fixed) / kUnit;
  return m;
}

double ResourceSet::Get(const std::string& name) const {
  auto it = amounts_.find(name);
  return it == amounts_.end() ? 0.0 : static_cast<double>(it->second) / kUnit;
}

void ResourceSet::Set(const std::string& name, double amount) {
  int64_t fixed = ToFixed(amount);
  if (fixed == 0) {
    amounts_.erase(name);
  } else {
    amounts_[name] = fixed;
  }
}

bool ResourceSet::Contains(const ResourceSet& request) const {
  for (const auto& [name, fixed] : request.amounts_) {
    auto it = amounts_.find(name);
    if (it == amounts_.end() || it->second < fixed) return false;
  }
  return true;
}

void ResourceSet::Add(const ResourceSet& other) {
  for (const auto& [name, fixed] : other.amounts_) {
    int64_t& slot = amounts_[name];
    slot += fixed;
    if (slot == 0) amounts_.erase(name);
  }
}

void ResourceSet::Subtract(const ResourceSet& other) {
  for (const auto& [name, fixed] : other.amounts_) {
    int64_t& slot = amounts_[name];
    slot -= fixed;
    if (slot == 0) amounts_.erase(name);
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

}  // namespace orb
