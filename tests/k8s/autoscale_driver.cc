// The workloads of the autoscaler tests: each asks for more than the cluster has, waits
// for it to run, and prints one JSON line saying where it ran.
//
//   autoscale_driver --orb-address=HOST:PORT tasks N SECONDS [CPUS]
//       N tasks of CPUS (default 1) CPUs that each sleep SECONDS:
//       {"tasks":N,"nodes":[...],"makespan_s":M,"starts_s":[...],"last_join_s":J,
//        "worker_starts_s":[...],"submitted_unix":T}
//       with each task's start, its worker process's start and the last time a node
//       joined, in seconds from submission
//   autoscale_driver --orb-address=HOST:PORT strict-spread N
//       a STRICT_SPREAD placement group of N bundles of 1 CPU, then a task in each:
//       {"bundles":N,"nodes":[...]}
//   autoscale_driver --orb-address=HOST:PORT gpu-actor
//       an actor needing GPU 1, asked for its node: {"gpu_actor_node":"..."}
//   autoscale_driver --orb-address=HOST:PORT selector-task SELECTOR
//       a task of 1 CPU that may run only on nodes whose labels match SELECTOR:
//       {"selector_task_node":"..."}
//   autoscale_driver --orb-address=HOST:PORT memory-growth MIB START_MIB FACTOR
//       a task asking for START_MIB of memory that allocates MIB, with memory_growth
//       FACTOR and 3 retries: {"memory_growth_node":"...","memory_bytes":M} (the node it
//       finished on and that node's memory), or {"skipped":"why"} when workers are not
//       in cgroups (no memory limit to pass)
//   autoscale_driver --orb-address=HOST:PORT keep-objects N MIB
//       N tasks of 2 CPUs (more than the head has) without retries, each making an
//       object of MIB MiB on a worker node; waits (reading none) until every worker node
//       has been scaled down, then reads them all: {"objects":N,"worker_nodes":W,
//       "scaled_down_after_s":S,"read_ok":R} (R == N: nothing was lost)
//   autoscale_driver --orb-address=HOST:PORT nested N
//       one task that runs N instant tasks of 1 CPU and waits for them:
//       {"nested":N,"nodes":[...],"worker_pids":P,"worker_pids_by_node":{NODE:P}}
//       (P: processes that ran them)
//   autoscale_driver --orb-address=HOST:PORT request CPUS
//       orb::RequestResources(CPUS) and exit: {"requested_cpus":CPUS}
// Exit status 0 when the work ran, 1 with the error on stderr otherwise.
#include <orb/api.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// When this process started, in Unix seconds (to 1/100 s): its start after boot, from
// /proc, set against the time since boot now.
double ProcessStartSeconds() {
  std::ifstream stat_file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // after the command name
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  double started_after_boot = std::stod(field) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  double uptime = 0;
  std::ifstream("/proc/uptime") >> uptime;
  return NowSeconds() - (uptime - started_after_boot);
}

// Its node, when it started and when its worker started (Unix seconds): "NODE START WORKER".
std::string SleepAndReport(double seconds) {
  double start = NowSeconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
  return orb::GetRuntimeContext().GetNodeId() + " " + std::to_string(start) + " " +
         std::to_string(ProcessStartSeconds());
}
ORB_REMOTE(SleepAndReport);

std::string SleepAndTell(double seconds) {
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
  return orb::GetRuntimeContext().GetNodeId();
}
ORB_REMOTE(SleepAndTell);

// Allocates `mib` MiB, touching every page; its node.
std::string AllocateAndTell(int64_t mib) {
  std::vector<std::unique_ptr<char[]>> chunks;
  for (int64_t i = 0; i < mib / 16; ++i) {
    chunks.emplace_back(new char[16 << 20]);
    std::memset(chunks.back().get(), 1, 16 << 20);
  }
  return orb::GetRuntimeContext().GetNodeId();
}
bool InCgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.find("/orb-") != std::string::npos;
}
ORB_REMOTE(AllocateAndTell, InCgroup);

struct GpuUser {
  static GpuUser* Create() { return new GpuUser(); }
  std::string Node() { return orb::GetRuntimeContext().GetNodeId(); }
};
ORB_REMOTE(GpuUser::Create, &GpuUser::Node);

// An object of `mib` MiB, every byte `seed`.
std::vector<uint8_t> Filled(int64_t mib, int seed) { return std::vector<uint8_t>(mib << 20, static_cast<uint8_t>(seed)); }
// Its node and process.
std::string Instant() { return orb::GetRuntimeContext().GetNodeId() + " " + std::to_string(::getpid()); }
// Runs `n` instant tasks and gathers where they ran.
std::vector<std::string> FanOut(int n) {
  std::vector<orb::ObjectRef<std::string>> refs;
  for (int i = 0; i < n; ++i) refs.push_back(orb::Task(Instant).Remote());
  std::vector<std::string> out;
  for (auto& r : refs) out.push_back(*orb::Get(r));
  return out;
}
ORB_REMOTE(Filled, Instant, FanOut);

namespace {

std::string JsonList(const std::set<std::string>& items) {
  std::string out = "[";
  for (const auto& s : items) out += (out.size() > 1 ? ",\"" : "\"") + s + "\"";
  return out + "]";
}

int Tasks(int n, double seconds, double cpus) {
  double submitted = NowSeconds();
  // Watches the cluster grow: when did the last node join?
  std::atomic<bool> done{false};
  std::atomic<double> last_join{0};
  std::thread watcher([&] {
    size_t alive = 0;
    while (!done) {
      size_t now = 0;
      for (const auto& node : orb::Nodes()) now += node.alive;
      if (now > alive && alive > 0) last_join = NowSeconds() - submitted;
      alive = std::max(alive, now);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::vector<orb::ObjectRef<std::string>> refs;
  for (int i = 0; i < n; ++i) refs.push_back(orb::Task(SleepAndReport).SetResource("CPU", cpus).Remote(seconds));
  std::set<std::string> nodes;
  std::string starts = "[", workers = "[";
  for (auto& r : refs) {
    std::istringstream report(*orb::Get(r));
    std::string node;
    double start = 0, worker = 0;
    report >> node >> start >> worker;
    nodes.insert(node);
    starts += (starts.size() > 1 ? "," : "") + std::to_string(start - submitted);
    workers += (workers.size() > 1 ? "," : "") + std::to_string(worker - submitted);
  }
  double makespan = NowSeconds() - submitted;
  done = true;
  watcher.join();
  std::cout << "{\"tasks\":" << n << ",\"nodes\":" << JsonList(nodes) << ",\"makespan_s\":" << makespan
            << ",\"starts_s\":" << starts << "],\"last_join_s\":" << last_join.load()
            << ",\"worker_starts_s\":" << workers << "],\"submitted_unix\":" << std::to_string(submitted) << "}"
            << std::endl;
  return 0;
}

int StrictSpread(int n) {
  std::vector<std::map<std::string, double>> bundles(n, {{"CPU", 1}});
  orb::PlacementGroup pg = orb::CreatePlacementGroup({"", bundles, orb::PlacementStrategy::STRICT_SPREAD});
  if (!pg.Wait(120)) {
    std::cerr << "the STRICT_SPREAD group was not placed within 120 s" << std::endl;
    return 1;
  }
  std::set<std::string> nodes;
  for (int i = 0; i < n; ++i) {
    nodes.insert(*orb::Get(orb::Task(SleepAndTell).SetResource("CPU", 1).SetPlacementGroup(pg, i).Remote(0.0)));
  }
  orb::RemovePlacementGroup(pg.GetID());
  std::cout << "{\"bundles\":" << n << ",\"nodes\":" << JsonList(nodes) << "}" << std::endl;
  return 0;
}

int MemoryGrowth(int64_t mib, int64_t start_mib, double factor) {
  if (!*orb::Task(InCgroup).Remote().Get(60000)) {
    std::cout << "{\"skipped\":\"workers are not in cgroups on this host\"}" << std::endl;
    return 0;
  }
  std::string node = *orb::Task(AllocateAndTell)
                          .SetResource("memory", static_cast<double>(start_mib << 20))
                          .SetMemoryGrowth(factor)
                          .SetMaxRetries(3)
                          .Remote(mib)
                          .Get(180000);
  double memory = 0;
  for (const auto& n : orb::Nodes()) {
    if (n.node_id == node) memory = n.resources_total.count("memory") ? n.resources_total.at("memory") : 0;
  }
  std::cout << "{\"memory_growth_node\":\"" << node << "\",\"memory_bytes\":" << static_cast<int64_t>(memory) << "}"
            << std::endl;
  return 0;
}

int GpuActor() {
  auto actor = orb::Actor(GpuUser::Create).SetResource("GPU", 1).Remote();
  std::string node = *orb::Get(actor.Task(&GpuUser::Node).Remote());
  std::cout << "{\"gpu_actor_node\":\"" << node << "\"}" << std::endl;
  actor.Kill();
  return 0;
}

size_t AliveNodes() {
  size_t n = 0;
  for (const auto& node : orb::Nodes()) n += node.alive;
  return n;
}

int KeepObjects(int n, int64_t mib) {
  size_t before = AliveNodes();
  std::vector<orb::ObjectRef<std::vector<uint8_t>>> refs;
  for (int i = 0; i < n; ++i) {
    refs.push_back(orb::Task(Filled).SetResource("CPU", 2).SetMaxRetries(0).Remote(mib, i + 1));
  }
  if (orb::Wait(refs, n, 180000).ready.size() != static_cast<size_t>(n)) {
    std::cerr << "the tasks did not finish within 180 s" << std::endl;
    return 1;
  }
  size_t workers = AliveNodes() - 1;
  double idle_since = NowSeconds();
  // Scale-down comes after idle_timeout_s; the objects must outlive their nodes.
  while (AliveNodes() > 1 && NowSeconds() - idle_since < 120) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (AliveNodes() > 1) {
    std::cerr << "worker nodes were not scaled down within 120 s" << std::endl;
    return 1;
  }
  double gone_after = NowSeconds() - idle_since;
  int ok = 0;
  for (int i = 0; i < n; ++i) {
    try {
      auto value = orb::Get(refs[i], 60000);
      bool right = value->size() == static_cast<size_t>(mib << 20) && value->front() == i + 1 && value->back() == i + 1;
      ok += right;
      if (!right) std::cerr << "object " << i << " has the wrong bytes" << std::endl;
    } catch (const std::exception& e) {
      std::cerr << "object " << i << ": " << e.what() << std::endl;
    }
  }
  std::cout << "{\"objects\":" << n << ",\"worker_nodes\":" << workers << ",\"nodes_before\":" << before
            << ",\"scaled_down_after_s\":" << gone_after << ",\"read_ok\":" << ok << "}" << std::endl;
  return ok == n ? 0 : 1;
}

int Nested(int n) {
  auto ran = *orb::Get(orb::Task(FanOut).Remote(n), 120000);
  std::set<std::string> nodes, pids;
  std::map<std::string, std::set<std::string>> pids_by_node;
  for (const auto& r : ran) {
    std::string node = r.substr(0, r.find(' '));
    nodes.insert(node);
    pids.insert(r);
    pids_by_node[node].insert(r);
  }
  std::string per_node = "{";
  for (const auto& [node, p] : pids_by_node) {
    per_node += (per_node.size() > 1 ? ",\"" : "\"") + node + "\":" + std::to_string(p.size());
  }
  std::cout << "{\"nested\":" << n << ",\"nodes\":" << JsonList(nodes) << ",\"worker_pids\":" << pids.size()
            << ",\"worker_pids_by_node\":" << per_node << "}}" << std::endl;
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  orb::Init(orb::Config(), argc, argv);
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind("--", 0) != 0) args.push_back(argv[i]);
  }
  int rc = 2;
  try {
    if ((args.size() == 3 || args.size() == 4) && args[0] == "tasks") {
      rc = Tasks(std::stoi(args[1]), std::stod(args[2]), args.size() == 4 ? std::stod(args[3]) : 1.0);
    } else if (args.size() == 2 && args[0] == "strict-spread") {
      rc = StrictSpread(std::stoi(args[1]));
    } else if (args.size() == 4 && args[0] == "memory-growth") {
      rc = MemoryGrowth(std::stoll(args[1]), std::stoll(args[2]), std::stod(args[3]));
    } else if (args.size() == 1 && args[0] == "gpu-actor") {
      rc = GpuActor();
    } else if (args.size() == 2 && args[0] == "selector-task") {
      std::string node = *orb::Get(orb::Task(SleepAndTell).SetResource("CPU", 1).SetLabelSelector(args[1]).Remote(0.0));
      std::cout << "{\"selector_task_node\":\"" << node << "\"}" << std::endl;
      rc = 0;
    } else if (args.size() == 3 && args[0] == "keep-objects") {
      rc = KeepObjects(std::stoi(args[1]), std::stoll(args[2]));
    } else if (args.size() == 2 && args[0] == "nested") {
      rc = Nested(std::stoi(args[1]));
    } else if (args.size() == 2 && args[0] == "request") {
      orb::RequestResources(std::stoi(args[1]));
      std::cout << "{\"requested_cpus\":" << args[1] << "}" << std::endl;
      rc = 0;
    } else {
      std::cerr << "usage: autoscale_driver --orb-address=A tasks N S [CPUS] | memory-growth MIB START_MIB FACTOR | strict-spread N | gpu-actor | "
                   "selector-task SELECTOR | keep-objects N MIB | nested N | request CPUS"
                << std::endl;
    }
  } catch (const std::exception& e) {
    std::cerr << "autoscale_driver: " << e.what() << std::endl;
    rc = 1;
  }
  orb::Shutdown();
  return rc;
}
