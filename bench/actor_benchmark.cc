// orb_actor_benchmark: Ray's actor microbenchmark metrics for orb, one JSON line each.
//
//   orb_actor_benchmark [--orb-address=H:P] [--quick]
//
// Metrics (Ray's names): 1_1_actor_calls_sync, 1_1_actor_calls_async,
// 1_1_actor_calls_concurrent, 1_n_actor_calls_async, n_n_actor_calls_async,
// actors_per_second (100 actors created until each has answered a call), and
// placement_group_create/removal (a one-bundle group created, waited for and removed).
#include <orb/api.h>

#include "bench_report.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace {

class Echo {
 public:
  static Echo* Create() { return new Echo(); }
  int Call(int x) { return x; }
};
ORB_REMOTE(Echo::Create, &Echo::Call);

// A client of n_n_actor_calls_async: makes `n` calls on its actor and waits for them.
int CallMany(orb::ActorHandle<Echo> actor, int n) {
  std::vector<orb::ObjectRef<int>> refs;
  refs.reserve(n);
  for (int i = 0; i < n; ++i) refs.push_back(actor.Task(&Echo::Call).Remote(i));
  int sum = 0;
  for (const auto& v : orb::Get(refs)) sum += *v;
  return sum;
}
ORB_REMOTE(CallMany);

using bench::Measure;

void CallAll(const std::vector<orb::ActorHandle<Echo>>& actors, int calls) {
  std::vector<orb::ObjectRef<int>> refs;
  refs.reserve(calls);
  for (int i = 0; i < calls; ++i) refs.push_back(actors[i % actors.size()].Task(&Echo::Call).Remote(i));
  orb::Get(refs);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--exit-at-once") == 0) return 0;  // for ProcessSpawnsPerSecond
  if (argc > 1 && std::strcmp(argv[1], "--fork-rate") == 0) {
    // As a fork server forks: a process of this executable before orb::Init.
    std::cout << bench::ForksPerSecond() << std::endl;
    return 0;
  }
  bool quick = false;
  for (int i = 1; i < argc; ++i) quick = quick || std::strcmp(argv[i], "--quick") == 0;
  int scale = quick ? 10 : 1;
  orb::Init(argc, argv);

  auto actor = orb::Actor(Echo::Create).Remote();
  orb::Get(actor.Task(&Echo::Call).Remote(0));  // created and reachable

  double round_trips = bench::UnixSocketRoundTripsPerSecond();
  bench::Report("unix_socket_round_trips", round_trips, "round trips/s", 0);
  int n = 5000 / scale;
  Measure(
      "1_1_actor_calls_sync", "calls/s", n,
      [&] {
        for (int i = 0; i < n; ++i) orb::Get(actor.Task(&Echo::Call).Remote(i));
      },
      {8000, round_trips, "unix_socket_round_trips"});
  n = 50000 / scale;
  Measure("1_1_actor_calls_async", "calls/s", n, [&] { CallAll({actor}, n); });

  auto concurrent = orb::Actor(Echo::Create).SetMaxConcurrency(16).Remote();
  orb::Get(concurrent.Task(&Echo::Call).Remote(0));
  n = 20000 / scale;
  Measure("1_1_actor_calls_concurrent", "calls/s", n, [&] { CallAll({concurrent}, n); });

  std::vector<orb::ActorHandle<Echo>> many;
  for (int i = 0; i < 4; ++i) many.push_back(orb::Actor(Echo::Create).Remote());
  CallAll(many, 4);
  n = 50000 / scale;
  Measure("1_n_actor_calls_async", "calls/s", n, [&] { CallAll(many, n); });

  // n clients (tasks), each calling its own actor.
  int clients = 4, per_client = 10000 / scale;
  Measure("n_n_actor_calls_async", "calls/s", clients * per_client, [&] {
    std::vector<orb::ObjectRef<int>> done;
    for (int c = 0; c < clients; ++c) done.push_back(orb::Task(CallMany).Remote(many[c], per_client));
    orb::Get(done);
  });

  for (auto& a : many) a.Kill();
  concurrent.Kill();
  actor.Kill();
  // A process linked with liborb, started and waited for: what a worker start costs at least.
  double spawns = bench::ProcessSpawnsPerSecond("/proc/self/exe", {"--exit-at-once"});
  bench::Report("process_spawns", spawns, "processes/s", 0);
  // Workers after a job's first are forked from its fork server: this bounds them.
  double forks = bench::OutputOf(std::filesystem::read_symlink("/proc/self/exe").string() + " --fork-rate");
  bench::Report("worker_forks", forks, "forks/s", 0);
  int count = 100 / (quick ? 5 : 1);
  Measure(
      "actors_per_second", "actors/s", count,
      [&] {
        std::vector<orb::ActorHandle<Echo>> created;
        for (int i = 0; i < count; ++i) created.push_back(orb::Actor(Echo::Create).Remote());
        CallAll(created, count);
        for (auto& a : created) a.Kill();
      },
      {200, forks, "worker_forks"});
  // The killed actors' processes exit in the background for a moment: let them, so
  // that their teardown is not counted against the next figure.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  count = 1000 / scale;
  Measure(
      "placement_group_create/removal", "groups/s", count,
      [&] {
        for (int i = 0; i < count; ++i) {
          auto pg = orb::CreatePlacementGroup({"bench", {{{"CPU", 0.01}}}, orb::PlacementStrategy::PACK});
          if (!pg.Wait(60)) std::cerr << "placement group not created in 60 s" << std::endl;
          orb::RemovePlacementGroup(pg.GetID());
        }
      },
      {2000, 0, ""});
  orb::Shutdown();
  return 0;
}
