#include "common/state_filter.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

namespace orb {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string CellText(const nlohmann::json& cell) {
  if (cell.is_null()) return "";
  if (cell.is_string()) return cell.get<std::string>();
  return cell.dump();
}

}  // namespace

absl::StatusOr<std::vector<StateFilter>> ParseStateFilters(const std::vector<std::string>& texts) {
  std::vector<StateFilter> out;
  for (const std::string& text : texts) {
    size_t ne = text.find("!=");
    size_t eq = text.find('=');
    StateFilter f;
    if (ne != std::string::npos && ne < eq) {
      f.key = Trim(text.substr(0, ne));
      f.equal = false;
      f.value = Trim(text.substr(ne + 2));
    } else if (eq != std::string::npos) {
      f.key = Trim(text.substr(0, eq));
      f.value = Trim(text.substr(eq + 1));
    }
    if (f.key.empty()) {
      return absl::InvalidArgumentError("bad filter '" + text + "': expected key=value or key!=value");
    }
    out.push_back(std::move(f));
  }
  return out;
}

absl::Status CheckFilterKeys(const std::vector<StateFilter>& filters, const std::vector<std::string>& columns) {
  for (const StateFilter& f : filters) {
    if (std::find(columns.begin(), columns.end(), f.key) != columns.end()) continue;
    std::string known;
    for (const auto& c : columns) known += (known.empty() ? "" : ", ") + c;
    return absl::InvalidArgumentError("bad filter key '" + f.key + "' (known: " + known + ")");
  }
  return absl::OkStatus();
}

bool MatchesStateFilters(const nlohmann::json& row, const std::vector<StateFilter>& filters) {
  for (const StateFilter& f : filters) {
    auto it = row.find(f.key);
    std::string cell = it == row.end() ? "" : CellText(*it);
    if ((Lower(cell) == Lower(f.value)) != f.equal) return false;
  }
  return true;
}

}  // namespace orb
