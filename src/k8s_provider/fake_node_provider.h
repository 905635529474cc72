// An in-memory NodeProvider for tests of the autoscaler: nodes appear at once (pending
// until the test marks them running), and faults can be injected.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "k8s_provider/node_provider.h"

namespace orb {

class FakeNodeProvider : public NodeProvider {
 public:
  // Faults: the next CreateNodes makes its nodes but answers Unavailable (a lost reply).
  bool lose_next_create_reply = false;
  // The next ListNodes fails.
  bool fail_next_list = false;

  absl::Status CreateNodes(const NodeLaunch& launch) override {
    creates++;
    int made = 0;
    for (const auto& n : nodes) made += n.launch_request == launch.request_id ? 1 : 0;
    for (int i = made; i < launch.count; ++i) {
      ProviderNode n;
      n.id = launch.node_type + "-" + std::to_string(next_id_++);
      n.node_type = launch.node_type;
      n.kind = launch.kind;
      n.launch_request = launch.request_id;
      nodes.push_back(n);
    }
    if (lose_next_create_reply) {
      lose_next_create_reply = false;
      return absl::UnavailableError("the reply was lost");
    }
    return absl::OkStatus();
  }

  absl::Status TerminateNodes(const std::vector<std::string>& ids) override {
    for (const auto& id : ids) {
      terminated.push_back(id);
      nodes.erase(std::remove_if(nodes.begin(), nodes.end(), [&](const ProviderNode& n) { return n.id == id; }),
                  nodes.end());
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<ProviderNode>> ListNodes() override {
    if (fail_next_list) {
      fail_next_list = false;
      return absl::UnavailableError("the API server did not answer");
    }
    return nodes;
  }

  int CountOfType(const std::string& type) const {
    return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [&](const ProviderNode& n) { return n.node_type == type; }));
  }

  std::vector<ProviderNode> nodes;
  std::vector<std::string> terminated;
  int creates = 0;

 private:
  int next_id_ = 0;
};

}  // namespace orb
