// Label selectors, like Kubernetes node selectors: a node matches when every
// requirement holds for its labels.
//
//   "zone in (a,b)"      the label exists and is one of the values
//   "zone notin (c)"     the label is absent or none of the values
//   "zone = a"           exact value ("==" too)
//   "zone != c"          absent or a different value
//   "ssd"                the label exists
//   "!spot"              the label does not exist
//
// Requirements are separated by commas outside parentheses: "zone in (a,b), !spot".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace orb {

class LabelSelector {
 public:
  LabelSelector() = default;
  // InvalidArgument naming the requirement that does not parse.
  static absl::StatusOr<LabelSelector> Parse(const std::string& text);

  bool Matches(const std::map<std::string, std::string>& labels) const;
  bool empty() const { return requirements_.empty(); }
  const std::string& text() const { return text_; }

 private:
  enum class Op { kIn, kNotIn, kExists, kNotExists };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements_;
  std::string text_;
};

}  // namespace orb
