#include "common/label_selector.h"

#include <algorithm>
#include <cctype>

namespace orb {
namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

bool ValidKey(const std::string& key) {
  if (key.empty()) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/';
  });
}

absl::StatusOr<std::vector<std::string>> ParseValues(const std::string& text, const std::string& whole) {
  std::string t = Trim(text);
  if (t.size() < 2 || t.front() != '(' || t.back() != ')') {
    return absl::InvalidArgumentError("label selector '" + whole + "': expected a list like (a,b)");
  }
  std::vector<std::string> values;
  std::string current;
  for (char c : t.substr(1, t.size() - 2)) {
    if (c == ',') {
      values.push_back(Trim(current));
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  values.push_back(Trim(current));
  for (const auto& v : values) {
    if (v.empty()) return absl::InvalidArgumentError("label selector '" + whole + "': empty value in list");
  }
  return values;
}

}  // namespace

absl::StatusOr<LabelSelector> LabelSelector::Parse(const std::string& text) {
  LabelSelector selector;
  selector.text_ = text;
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth < 0) return absl::InvalidArgumentError("label selector '" + text + "': unbalanced ')'");
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (depth != 0) return absl::InvalidArgumentError("label selector '" + text + "': unbalanced '('");
  parts.push_back(current);
  for (const auto& raw : parts) {
    std::string part = Trim(raw);
    if (part.empty()) {
      if (parts.size() == 1) break;  // the empty selector matches everything
      return absl::InvalidArgumentError("label selector '" + text + "': empty requirement");
    }
    Requirement req;
    size_t pos;
    if ((pos = part.find(" notin ")) != std::string::npos || (pos = part.find(" in ")) != std::string::npos) {
      bool notin = part.compare(pos, 7, " notin ") == 0;
      req.key = Trim(part.substr(0, pos));
      req.op = notin ? Op::kNotIn : Op::kIn;
      auto values = ParseValues(part.substr(pos + (notin ? 7 : 4)), text);
      if (!values.ok()) return values.status();
      req.values = *values;
    } else if ((pos = part.find("!=")) != std::string::npos) {
      req.key = Trim(part.substr(0, pos));
      req.op = Op::kNotIn;
      req.values = {Trim(part.substr(pos + 2))};
    } else if ((pos = part.find('=')) != std::string::npos) {
      req.key = Trim(part.substr(0, pos));
      req.op = Op::kIn;
      size_t value_start = part.compare(pos, 2, "==") == 0 ? pos + 2 : pos + 1;
      req.values = {Trim(part.substr(value_start))};
    } else if (part[0] == '!') {
      req.key = Trim(part.substr(1));
      req.op = Op::kNotExists;
    } else {
      req.key = part;
      req.op = Op::kExists;
    }
    if (!ValidKey(req.key)) {
      return absl::InvalidArgumentError("label selector '" + text + "': invalid key in '" + part + "'");
    }
    for (const auto& v : req.values) {
      if (v.empty()) return absl::InvalidArgumentError("label selector '" + text + "': empty value in '" + part + "'");
    }
    selector.requirements_.push_back(std::move(req));
  }
  return selector;
}

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  for (const auto& req : requirements_) {
    auto it = labels.find(req.key);
    bool present = it != labels.end();
    bool listed = present && std::find(req.values.begin(), req.values.end(), it->second) != req.values.end();
    switch (req.op) {
      case Op::kIn:
        if (!listed) return false;
        break;
      case Op::kNotIn:
        if (listed) return false;
        break;
      case Op::kExists:
        if (!present) return false;
        break;
      case Op::kNotExists:
        if (present) return false;
        break;
    }
  }
  return true;
}

}  // namespace orb
