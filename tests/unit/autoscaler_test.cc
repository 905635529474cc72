// The autoscaler's loop against a fake provider and a fake cluster, with an injected
// clock: launches are counted until their nodes join (never doubled, even when a
// create's reply is lost), idle nodes are drained and terminated after idle_timeout
// (kept when the drain finds them busy), failed nodes are replaced.
#include <catch2/catch.hpp>
#include <set>

#include "autoscaler/autoscaler.h"
#include "k8s_provider/fake_node_provider.h"

using namespace orb;
using namespace orb::autoscaler;
using namespace std::chrono_literals;

namespace {

class FakeCluster : public ClusterStateSource {
 public:
  absl::StatusOr<ClusterState> Read() override { return state; }
  absl::Status Drain(const ClusterNodeState& node, const std::string&, const std::vector<std::string>&) override {
    drained.push_back(node.provider_node_id);
    if (busy.count(node.provider_node_id)) return absl::FailedPreconditionError("1 leases are running");
    return absl::OkStatus();
  }
  absl::Status PublishStatus(const std::string& json) override {
    published = json;
    return absl::OkStatus();
  }

  ClusterState state;
  std::set<std::string> busy;
  std::vector<std::string> drained;
  std::string published;
};

ResourceSet Cpus(double n) { return ResourceSet::FromMap({{"CPU", n}}); }

struct Harness {
  Harness() {
    auto parsed = ParseClusterConfig(R"(cluster_name: t
idle_timeout_minutes: 30
head_node_type: head
available_node_types:
  head: {resources: {CPU: 2}}
  cpu: {resources: {CPU: 2}, min_workers: 0, max_workers: 4}
)",
                                     "test.yaml");
    REQUIRE(parsed.ok());
    AutoscalerOptions options;
    options.config = *parsed;
    autoscaler = std::make_unique<Autoscaler>(options, &provider, &cluster, [this] { return now; });
    ClusterNodeState head;
    head.node_id = "head";
    head.raylet_address = "127.0.0.1:1";
    head.total = Cpus(2);
    head.available = Cpus(0);
    cluster.state.nodes.push_back(head);
  }

  // The provider's nodes join the cluster, idle.
  void JoinAll() {
    for (auto& n : provider.nodes) {
      n.state = ProviderNodeState::kRunning;
      bool joined = false;
      for (const auto& c : cluster.state.nodes) joined |= c.provider_node_id == n.id;
      if (joined) continue;
      ClusterNodeState c;
      c.node_id = "node-" + n.id;
      c.provider_node_id = n.id;
      c.total = Cpus(2);
      c.available = Cpus(2);
      cluster.state.nodes.push_back(c);
    }
  }

  void Update() { REQUIRE(autoscaler->Update().ok()); }

  std::chrono::steady_clock::time_point now{std::chrono::hours(1)};
  FakeNodeProvider provider;
  FakeCluster cluster;
  std::unique_ptr<Autoscaler> autoscaler;
};

}  // namespace

TEST_CASE("queued work launches nodes once; rounds before they join add none", "[autoscaler]") {
  Harness h;
  h.cluster.state.nodes[0].queued = {{Cpus(1), 6}};
  h.Update();
  CHECK(h.provider.CountOfType("cpu") == 3);
  for (int i = 0; i < 5; ++i) {
    h.now += 1s;
    h.Update();  // still queued, nodes pending: nothing more
  }
  CHECK(h.provider.CountOfType("cpu") == 3);
  CHECK(h.cluster.published.find("launching") != std::string::npos);
}

TEST_CASE("a create whose reply was lost is not repeated", "[autoscaler]") {
  Harness h;
  h.cluster.state.nodes[0].queued = {{Cpus(1), 4}};
  h.provider.lose_next_create_reply = true;
  h.Update();
  CHECK(h.provider.CountOfType("cpu") == 2);  // made, though the reply said otherwise
  h.now += 1s;
  h.Update();
  CHECK(h.provider.CountOfType("cpu") == 2);  // counted by their launch label: not doubled
}

TEST_CASE("idle nodes are drained and terminated after idle_timeout; busy ones are kept", "[autoscaler]") {
  Harness h;
  h.cluster.state.nodes[0].queued = {{Cpus(1), 4}};
  h.Update();
  REQUIRE(h.provider.CountOfType("cpu") == 2);
  h.cluster.state.nodes[0].queued.clear();
  h.JoinAll();
  h.Update();  // idle from now
  h.now += 29min;
  h.Update();
  CHECK(h.provider.terminated.empty());
  std::string busy_one = h.provider.nodes[0].id;
  h.cluster.busy.insert(busy_one);  // the raylet took work since the last report
  h.now += 2min;
  h.Update();
  REQUIRE(h.provider.terminated.size() == 1);
  CHECK(h.provider.terminated[0] != busy_one);
  CHECK(h.cluster.drained.size() == 2);  // both asked; the busy one said no
  CHECK(h.provider.CountOfType("cpu") == 1);
  CHECK(h.cluster.published.find("keeping " + busy_one) != std::string::npos);
}

TEST_CASE("a failed node is terminated and replaced after a back-off that grows with failures", "[autoscaler]") {
  Harness h;
  h.cluster.state.nodes[0].queued = {{Cpus(2), 1}};
  h.Update();
  REQUIRE(h.provider.nodes.size() == 1);
  std::string first = h.provider.nodes[0].id;
  h.provider.nodes[0].state = ProviderNodeState::kFailed;
  h.provider.nodes[0].failure = "pod Failed (container orb: OOMKilled, exit code 137)";
  h.now += 1s;
  h.Update();
  CHECK(std::find(h.provider.terminated.begin(), h.provider.terminated.end(), first) != h.provider.terminated.end());
  CHECK(h.provider.nodes.empty());  // not at once: a broken template must not make a pod a second
  CHECK(h.cluster.published.find("OOMKilled") != std::string::npos);
  CHECK(h.cluster.published.find("launching again in") != std::string::npos);
  h.now += 6s;
  h.Update();
  REQUIRE(h.provider.nodes.size() == 1);
  CHECK(h.provider.nodes[0].id != first);
  // It fails too: the pause doubles (10 s).
  h.provider.nodes[0].state = ProviderNodeState::kFailed;
  h.now += 1s;
  h.Update();
  h.now += 6s;
  h.Update();
  CHECK(h.provider.nodes.empty());
  h.now += 5s;
  h.Update();
  CHECK(h.provider.nodes.size() == 1);
}

TEST_CASE("a provider that cannot list is reported and nothing is decided", "[autoscaler]") {
  Harness h;
  h.cluster.state.nodes[0].queued = {{Cpus(1), 4}};
  h.provider.fail_next_list = true;
  CHECK_FALSE(h.autoscaler->Update().ok());
  CHECK(h.provider.creates == 0);
  CHECK(h.cluster.published.find("cannot list the provider's nodes") != std::string::npos);
  h.Update();
  CHECK(h.provider.CountOfType("cpu") == 2);
}
