// orb_microbenchmark: Ray's microbenchmark metrics for orb, one JSON line per metric.
//
//   orb_microbenchmark                       # on an embedded cluster
//   orb_microbenchmark --orb-address=H:P     # on a running cluster
//   orb_microbenchmark --quick               # fewer iterations (smoke test)
//
// Each line: {"metric": NAME, "value": X, "unit": U, "seconds": T}, with "target" and
// "limit" (see bench_report.h) where the figure has one. Names match Ray's release
// microbenchmark so figures compare directly.
#include <orb/api.h>
#include <unistd.h>

#include "bench_report.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

int Noop(int x) { return x; }

// A client in multi_client_tasks_async: submits n tasks of its own and waits for them.
int SubmitMany(int n) {
  std::vector<orb::ObjectRef<int>> refs;
  refs.reserve(n);
  for (int i = 0; i < n; ++i) refs.push_back(orb::Task(Noop).Remote(i));
  int sum = 0;
  for (const auto& v : orb::Get(refs)) sum += *v;
  return sum;
}
ORB_REMOTE(Noop, SubmitMany);

using bench::Clock;
using bench::Measure;
using bench::Report;

using bench::RssKiB;

// The largest resident set among this machine's orb workers (found by their flag).
long MaxWorkerRssKiB() {
  long best = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find("--orb-worker-mode") == std::string::npos) continue;
    best = std::max(best, RssKiB(std::stoi(entry.path().filename().string())));
  }
  return best;
}

pid_t PidFromFile(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

pid_t ParentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PPid:", 0) == 0) return static_cast<pid_t>(std::stol(line.substr(5)));
  }
  return 0;
}

// The session of the cluster this driver started (its GCS is our child); else the
// latest session (a cluster started with `orb start`).
std::string SessionDir() {
  const char* temp = std::getenv("ORB_TEMP_DIR");
  std::string base = temp && *temp ? temp : "/tmp/orb-" + std::to_string(::getuid());
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
    if (entry.path().filename().string().rfind("session_2", 0) != 0) continue;
    pid_t gcs = PidFromFile((entry.path() / "gcs.pid").string());
    if (gcs > 0 && ParentOf(gcs) == ::getpid()) return entry.path().string();
  }
  return base + "/session_latest";
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) quick = quick || std::strcmp(argv[i], "--quick") == 0;
  int scale = quick ? 10 : 1;
  orb::Config config;
  config.object_store_memory = 1ll << 30;
  orb::Init(config, argc, argv);

  // Warm up: start the workers once so that process start-up is not measured.
  orb::Get(std::vector<orb::ObjectRef<int>>{orb::Task(Noop).Remote(0), orb::Task(Noop).Remote(1)});

  double round_trips = bench::UnixSocketRoundTripsPerSecond();
  Report("unix_socket_round_trips", round_trips, "round trips/s", 0);
  int n = 2000 / scale;
  Measure(
      "single_client_tasks_sync", "tasks/s", n,
      [&] {
        for (int i = 0; i < n; ++i) orb::Get(orb::Task(Noop).Remote(i));
      },
      {8000, round_trips, "unix_socket_round_trips"});

  n = 20000 / scale;
  Measure("single_client_tasks_async", "tasks/s", n, [&] {
    std::vector<orb::ObjectRef<int>> refs;
    refs.reserve(n);
    for (int i = 0; i < n; ++i) refs.push_back(orb::Task(Noop).Remote(i));
    orb::Get(refs);
  });

  int clients = 4, per_client = 5000 / scale;
  Measure("multi_client_tasks_async", "tasks/s", clients * per_client, [&] {
    std::vector<orb::ObjectRef<int>> refs;
    for (int c = 0; c < clients; ++c) refs.push_back(orb::Task(SubmitMany).Remote(per_client));
    orb::Get(refs);
  });

  n = 20000 / scale;
  Measure("single_client_put_calls", "calls/s", n, [&] {
    for (int i = 0; i < n; ++i) orb::Put(i);
  });

  auto local = orb::Put(42);
  n = 200000 / scale;
  Measure("single_client_get_calls", "calls/s", n, [&] {
    for (int i = 0; i < n; ++i) orb::Get(local);
  });

  // 100 MiB values, as in Ray's benchmark (a numpy array there, a byte vector here).
  const size_t big = 100ull << 20;
  std::vector<uint8_t> payload(big, 7);
  auto release_payload = [&payload] { std::vector<uint8_t>().swap(payload); };
  int puts = quick ? 2 : 10;
  double memcpy_rate;
  {
    // The reference point: a plain memcpy into memory that is already mapped and touched.
    std::vector<uint8_t> target(big, 1);
    auto start = Clock::now();
    for (int i = 0; i < puts; ++i) std::memcpy(target.data(), payload.data(), big);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    memcpy_rate = static_cast<double>(big) * puts / 1e9 / seconds;
    Report("memcpy_prefaulted_gigabytes", memcpy_rate, "GB/s", seconds);
  }
  // Untimed first, as Ray's timeit warms up: the first write to each page of the store
  // from this process costs a page fault (see docs/performance.md).
  for (int i = 0; i < puts; ++i) orb::Put(payload);
  Measure(
      "single_client_put_gigabytes", "GB/s", static_cast<double>(big) * puts / 1e9,
      [&] {
        for (int i = 0; i < puts; ++i) orb::Put(payload);
      },
      {0.8 * memcpy_rate, memcpy_rate, "memcpy_prefaulted_gigabytes"});
  release_payload();

  std::vector<orb::ObjectRef<int>> thousand;
  for (int i = 0; i < 1000; ++i) thousand.push_back(orb::Task(Noop).Remote(i));
  orb::Get(thousand);
  n = 200 / scale;
  Measure("single_client_wait_1k_refs", "calls/s", n, [&] {
    for (int i = 0; i < n; ++i) orb::Wait(thousand, 1000, -1);
  });

  n = 10 / std::min(scale, 5);
  Measure("single_client_tasks_and_get_batch", "batches/s", n, [&] {
    for (int b = 0; b < n; ++b) {
      std::vector<orb::ObjectRef<int>> refs;
      for (int i = 0; i < 1000; ++i) refs.push_back(orb::Task(Noop).Remote(i));
      orb::Get(refs);
    }
  });

  // Memory: daemons of the local session, before and after 100,000 tasks whose refs are dropped.
  std::string session = SessionDir();
  pid_t gcs = PidFromFile(session + "/gcs.pid");
  pid_t raylet = PidFromFile(session + "/raylet.pid");
  auto run_tasks = [](int count) {
    for (int done = 0; done < count; done += 10000) {
      std::vector<orb::ObjectRef<int>> refs;
      for (int i = 0; i < 10000; ++i) refs.push_back(orb::Task(Noop).Remote(i));
      orb::Get(refs);
    }
  };
  run_tasks(20000);  // warm-up: allocator arenas of every thread reach their working size
  long driver_before = RssKiB(getpid()), gcs_before = RssKiB(gcs), raylet_before = RssKiB(raylet);
  long worker_before = MaxWorkerRssKiB();
  int total = quick ? 10000 : 100000;
  auto start = Clock::now();
  run_tasks(total);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Report("tasks_then_refs_dropped", total / seconds, "tasks/s", seconds);
  Report("driver_rss_mib_before", driver_before / 1024.0, "MiB", 0);
  Report("driver_rss_mib_after", RssKiB(getpid()) / 1024.0, "MiB", 0);
  Report("worker_rss_mib_before", worker_before / 1024.0, "MiB", 0);
  Report("worker_rss_mib_after", MaxWorkerRssKiB() / 1024.0, "MiB", 0);
  if (gcs > 0) {
    Report("gcs_server_rss_mib_before", gcs_before / 1024.0, "MiB", 0);
    Report("gcs_server_rss_mib_after", RssKiB(gcs) / 1024.0, "MiB", 0);
  }
  if (raylet > 0) {
    Report("raylet_rss_mib_before", raylet_before / 1024.0, "MiB", 0);
    Report("raylet_rss_mib_after", RssKiB(raylet) / 1024.0, "MiB", 0);
  }
  orb::Shutdown();
  return 0;
}
