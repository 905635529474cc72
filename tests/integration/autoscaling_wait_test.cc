// Work that no node can run now, on a cluster whose autoscaler may add nodes
// (`orb start --head --autoscaling-config`): it waits while some node type could run
// it (and runs once such a node joins); InfeasibleError stays the answer when no node
// type could. A config that does not parse stops `orb start` with the reason.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "cli_cluster.h"

namespace {

int NeedsGpu(int x) { return x * 2; }
ORB_REMOTE(NeedsGpu);

std::string WriteFile(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::ofstream(path) << text;
  return path.string();
}

const char kConfig[] = R"(# Ray's cluster config shape: only the node types matter here.
cluster_name: test
available_node_types:
  cpu_worker:
    resources: {"CPU": 4}
    max_workers: 2
  gpu_worker:
    resources:
      CPU: 8
      GPU: 2
    labels: {accelerator: h200}
    min_workers: 0
    max_workers: 1
)";

orb::testing::CliCluster& Cluster() {
  static std::string config = WriteFile("orb-autoscaling.yaml", kConfig);
  static orb::testing::CliCluster cluster(
      "autoscale", "--num-cpus 1 --num-gpus 0 --infeasible-grace-ms 300 --autoscaling-config " + config, {});
  return cluster;
}

bool LogSays(const std::filesystem::path& dir, const std::string& text) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.find(text) != std::string::npos) return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("work only a launchable node type could run waits for it, then runs there", "[autoscaling]") {
  auto& c = Cluster();
  auto waiting = orb::Task(NeedsGpu).SetResource("GPU", 1).Remote(21);
  // Well past the grace period: still pending, not InfeasibleError.
  CHECK(orb::Wait(std::vector<orb::ObjectRef<int>>{waiting}, 1, 2000).ready.empty());
  CHECK(orb::testing::WaitFor([&] { return LogSays(c.temp_, "autoscaler may add a node of type 'gpu_worker'"); },
                              std::chrono::seconds(5)));
  // A node of that kind joins (as the autoscaler would add it): the task runs there.
  orb::testing::Run(c.orb_ + " start --address " + c.address_ + " --num-cpus 1 --num-gpus 1");
  CHECK(*waiting.Get(30000) == 42);
}

TEST_CASE("work no node type could run is still InfeasibleError, naming why", "[autoscaling][errors]") {
  Cluster();
  auto impossible = orb::Task(NeedsGpu).SetResource("GPU", 16).Remote(1);
  CHECK_THROWS_AS(impossible.Get(30000), orb::InfeasibleError);
  CHECK_THROWS_WITH(impossible.Get(30000), Catch::Contains("no node type the autoscaler may launch"));
  auto wrong_labels = orb::Task(NeedsGpu).SetResource("GPU", 1).SetLabelSelector("accelerator in (tpu)").Remote(1);
  CHECK_THROWS_AS(wrong_labels.Get(30000), orb::InfeasibleError);
}

TEST_CASE("an autoscaling config that does not parse stops orb start with the reason", "[autoscaling][errors]") {
  std::string bad = WriteFile("orb-autoscaling-bad.yaml", "available_node_types:\n  gpu:\n    resources: {GPU: -1}\n");
  std::string orb_bin = std::string(std::getenv("ORB_BIN_DIR")) + "/orb";
  std::string out = orb::testing::RunAnyway(orb_bin + " start --head --port 0 --autoscaling-config " + bad + " 2>&1");
  CHECK_THAT(out, Catch::Contains(bad) && Catch::Contains("gpu"));
}
