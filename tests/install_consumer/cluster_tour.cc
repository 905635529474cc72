// A tour of a multi-node cluster, written against the public API contract only:
// steer tasks by custom resources, read a 64 MiB object produced on another node, and
// spread slow tasks (with retries) over the nodes while one of them may be killed.
//
//   cluster_tour --orb-address=HOST:PORT [--batch-started-file=PATH]
// Needs nodes offering `zone_b` and `zone_c`. Exits 0 when every check held.
#include <orb/api.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

std::string WhereAmI() { return orb::GetRuntimeContext().GetNodeId(); }
ORB_REMOTE(WhereAmI);

// `mib` MiB whose byte i is i * 31 mod 251, and the node that made it.
std::pair<std::string, std::string> MakeBlob(int mib) {
  std::string blob(static_cast<size_t>(mib) << 20, '\0');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>((i * 31) % 251);
  return {orb::GetRuntimeContext().GetNodeId(), std::move(blob)};
}
ORB_REMOTE(MakeBlob);

std::pair<std::string, int> SlowSquare(int x) {
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  return {orb::GetRuntimeContext().GetNodeId(), x * x};
}
ORB_REMOTE(SlowSquare);

namespace {

std::string NodeWith(const std::string& resource) {
  for (const auto& node : orb::Nodes()) {
    if (node.alive && node.resources_total.count(resource)) return node.node_id;
  }
  return "";
}

bool Fail(const std::string& why) {
  std::cerr << "cluster_tour FAILED: " << why << std::endl;
  return false;
}

bool Tour(const std::string& batch_started_file) {
  int alive = 0;
  for (const auto& node : orb::Nodes()) alive += node.alive;
  std::cout << "cluster: " << alive << " live nodes" << std::endl;
  std::string zone_b = NodeWith("zone_b"), zone_c = NodeWith("zone_c");
  if (zone_b.empty() || zone_c.empty()) return Fail("needs nodes offering zone_b and zone_c");

  std::vector<orb::ObjectRef<std::string>> steered;
  for (int i = 0; i < 4; ++i) steered.push_back(orb::Task(WhereAmI).SetResource("zone_b", 1).Remote());
  for (const auto& where : orb::Get(steered)) {
    if (*where != zone_b) return Fail("a task needing zone_b ran on " + *where);
  }
  std::cout << "steered: 4 tasks needing zone_b ran on " << zone_b.substr(0, 8) << std::endl;

  auto blob = orb::Task(MakeBlob).SetResource("zone_c", 1).Remote(64).Get(120000);
  std::string driver_node = orb::GetRuntimeContext().GetNodeId();
  if (blob->first == driver_node) return Fail("the blob was made on the driver's own node");
  if (blob->second.size() != (size_t{64} << 20)) return Fail("blob has " + std::to_string(blob->second.size()) + " bytes");
  for (size_t i = 0; i < blob->second.size(); i += 4093) {
    if (blob->second[i] != static_cast<char>((i * 31) % 251)) return Fail("blob differs at byte " + std::to_string(i));
  }
  std::cout << "read 64 MiB produced on node " << blob->first.substr(0, 8) << std::endl;

  std::vector<orb::ObjectRef<std::pair<std::string, int>>> batch;
  for (int i = 0; i < 16; ++i) {
    batch.push_back(
        orb::Task(SlowSquare).SetSchedulingStrategy(orb::SpreadSchedulingStrategy{}).SetMaxRetries(3).Remote(i));
  }
  if (!batch_started_file.empty()) std::ofstream(batch_started_file) << "started\n";
  std::set<std::string> nodes_used;
  auto results = orb::Get(batch, 180000);
  for (int i = 0; i < 16; ++i) {
    if (results[i]->second != i * i) return Fail("slow task " + std::to_string(i) + " returned a wrong value");
    nodes_used.insert(results[i]->first);
  }
  std::cout << "spread: 16 slow tasks, every result correct, on " << nodes_used.size() << " nodes" << std::endl;
  if (nodes_used.size() < 2) return Fail("slow tasks did not spread");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string batch_started_file;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--batch-started-file=", 21) == 0) batch_started_file = argv[i] + 21;
  }
  orb::Init(argc, argv);
  bool ok = false;
  try {
    ok = Tour(batch_started_file);
  } catch (const orb::Error& e) {
    ok = Fail(e.what());
  }
  std::cout << (ok ? "cluster tour ok" : "cluster tour failed") << std::endl;
  orb::Shutdown();
  return ok ? 0 : 1;
}
