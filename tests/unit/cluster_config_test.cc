// The cluster YAML of `orb up` and the autoscaler: what it reads, and errors that name
// the line and the key.
#include <catch2/catch.hpp>

#include "autoscaler/cluster_config.h"

using orb::autoscaler::ParseClusterConfig;

namespace {

const char kGood[] = R"(cluster_name: demo
max_workers: 6
idle_timeout_minutes: 2
provider:
  type: kubernetes
  namespace: orb
  server: http://127.0.0.1:8001
head_node_type: head
available_node_types:
  head:
    resources: {CPU: 2}
  cpu_worker:
    resources: {CPU: 2, memory: 4294967296}
    labels: {zone: a}
    min_workers: 1
    max_workers: 4
    pod_template:
      spec:
        nodeSelector: {pool: cpu}
)";

std::string Error(const std::string& yaml) {
  auto parsed = ParseClusterConfig(yaml, "cluster.yaml");
  REQUIRE_FALSE(parsed.ok());
  return std::string(parsed.status().message());
}

}  // namespace

TEST_CASE("a cluster config is read with its node types and provider", "[cluster_config]") {
  auto c = ParseClusterConfig(kGood, "cluster.yaml");
  REQUIRE(c.ok());
  CHECK(c->cluster_name == "demo");
  CHECK(c->max_workers == 6);
  CHECK(c->idle_timeout == std::chrono::minutes(2));
  CHECK(c->provider.type == "kubernetes");
  CHECK(c->provider.namespace_ == "orb");
  REQUIRE(c->node_types.size() == 2);
  const auto* w = c->FindType("cpu_worker");
  REQUIRE(w);
  CHECK(w->resources.at("CPU") == 2);
  CHECK(w->labels.at("zone") == "a");
  CHECK(w->max_workers == 4);
  CHECK(w->pod_template["spec"]["nodeSelector"]["pool"] == "cpu");
  // The raylets' view: worker types only.
  CHECK(c->NodeTypesJson().find("cpu_worker") != std::string::npos);
  CHECK(c->NodeTypesJson().find("\"head\"") == std::string::npos);
}

TEST_CASE("an unknown key is an error naming its line and a close match", "[cluster_config]") {
  std::string yaml = kGood;
  yaml.replace(yaml.find("    max_workers: 4"), 18, "    max_worker: 4");
  std::string e = Error(yaml);
  CHECK(e.find("cluster.yaml line 16") != std::string::npos);
  CHECK(e.find("unknown key 'max_worker'") != std::string::npos);
  CHECK(e.find("did you mean 'max_workers'") != std::string::npos);
}

TEST_CASE("bad YAML, wrong types and bad values name the line", "[cluster_config]") {
  CHECK(Error("cluster_name: demo\navailable_node_types: [\n").find("line ") != std::string::npos);
  std::string yaml = kGood;
  yaml.replace(yaml.find("max_workers: 6"), 14, "max_workers: six");
  std::string e = Error(yaml);
  CHECK(e.find("line 2") != std::string::npos);
  CHECK(e.find("whole number") != std::string::npos);
  CHECK(Error("cluster_name: Demo_1\nhead_node_type: h\navailable_node_types: {h: {}}\n").find("lower-case") !=
        std::string::npos);
  CHECK(Error("cluster_name: d\nhead_node_type: x\navailable_node_types: {h: {}}\n").find("'x' is not in") !=
        std::string::npos);
  CHECK(Error("cluster_name: d\nhead_node_type: h\nprovider: {type: aws}\navailable_node_types: {h: {}}\n")
            .find("line 3") != std::string::npos);
  CHECK(Error("cluster_name: d\nhead_node_type: h\navailable_node_types:\n  h: {resources: {CPU: -1}}\n")
            .find("line 4") != std::string::npos);
  CHECK(Error("cluster_name: d\nhead_node_type: h\navailable_node_types:\n  w: {min_workers: 3, max_workers: 1}\n  h: {}\n")
            .find("min_workers 3 is above max_workers 1") != std::string::npos);
}

TEST_CASE("warm_pool is read, and one beyond max_workers names its line", "[cluster_config]") {
  std::string yaml = kGood;
  yaml.replace(yaml.find("    max_workers: 4"), 18, "    max_workers: 4\n    warm_pool: 2");
  auto c = ParseClusterConfig(yaml, "cluster.yaml");
  REQUIRE(c.ok());
  CHECK(c->FindType("cpu_worker")->warm_pool == 2);
  CHECK(c->NodeTypesJson().find("\"warm_pool\":2") != std::string::npos);
  yaml.replace(yaml.find("warm_pool: 2"), 12, "warm_pool: 5");
  std::string e = Error(yaml);
  CHECK(e.find("line 17") != std::string::npos);
  CHECK(e.find("warm_pool 5 must be between 0 and max_workers 4") != std::string::npos);
}
