// orb_queue_benchmark: one driver queues a large number of tasks at once (default
// 1,000,000), as Ray's scalability envelope does, then waits for all of them.
//
//   orb_queue_benchmark [--tasks=N] [--orb-address=H:P]
//
// Every task takes, as an argument, the result of a call that blocks until the
// benchmark opens a gate (an actor), so all N stay queued in the driver while they are
// submitted. Prints the submission rate of each tenth of the tasks (flat from the first
// to the last means queuing does not slow down as the queue grows), the driver's memory
// per queued task (its resident set after submitting, less before, less the program's
// own vector of refs, over N; target at most 1 KiB), then opens the gate and prints the
// rate at which the queue drains.
#include <orb/api.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <string>

#include "bench_report.h"

namespace {

int Noop(int x) { return x; }
int NoopAfter(int x, int /*gate*/) { return x; }
ORB_REMOTE(Noop, NoopAfter);

// Wait() returns once Open() was called (the actor runs both at once).
class Gate {
 public:
  static Gate* Create() { return new Gate(); }
  int Wait() {
    while (!open_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return 1;
  }
  int Open() {
    open_ = true;
    return 0;
  }

 private:
  std::atomic<bool> open_{false};
};
ORB_REMOTE(Gate::Create, &Gate::Wait, &Gate::Open);

}  // namespace

int main(int argc, char** argv) {
  long total = 1000000;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--tasks=", 8) == 0) total = std::atol(argv[i] + 8);
  }
  orb::Init(argc, argv);
  orb::Get(orb::Task(Noop).Remote(0));  // workers started
  auto gate = orb::Actor(Gate::Create).SetMaxConcurrency(2).Remote();
  orb::ObjectRef<int> opened = gate.Task(&Gate::Wait).Remote();
  std::vector<orb::ObjectRef<int>> refs;
  refs.reserve(total);
  long before = bench::RssKiB(::getpid());
  long tenth = std::max(1L, total / 10);
  auto start = bench::Clock::now();
  auto chunk_start = start;
  for (long i = 0; i < total; ++i) {
    refs.push_back(orb::Task(NoopAfter).Remote(static_cast<int>(i), opened));
    if ((i + 1) % tenth == 0) {
      auto now = bench::Clock::now();
      double seconds = std::chrono::duration<double>(now - chunk_start).count();
      std::cout << "{\"metric\": \"queued_tasks_submit_rate\", \"from\": " << i + 1 - tenth << ", \"to\": " << i + 1
                << ", \"value\": " << tenth / seconds << ", \"unit\": \"tasks/s\"}" << std::endl;
      chunk_start = now;
    }
  }
  double submit_seconds = std::chrono::duration<double>(bench::Clock::now() - start).count();
  long after = bench::RssKiB(::getpid());
  bench::Report("queued_tasks_submitted", total / submit_seconds, "tasks/s", submit_seconds);
  // The refs vector is the program's, not the runtime's: taken out.
  double refs_bytes = static_cast<double>(refs.size() * sizeof(orb::ObjectRef<int>));
  bench::Report("driver_memory_per_queued_task", ((after - before) * 1024.0 - refs_bytes) / total, "bytes", 0,
                {1024, 0, ""});
  auto drain = bench::Clock::now();
  orb::Get(gate.Task(&Gate::Open).Remote());
  long sum = 0, expected = 0;
  for (long done = 0; done < total; done += tenth) {
    std::vector<orb::ObjectRef<int>> part(refs.begin() + done, refs.begin() + std::min(total, done + tenth));
    for (const auto& v : orb::Get(part)) sum += *v;
  }
  for (long i = 0; i < total; ++i) expected += static_cast<int>(i);
  double drain_seconds = std::chrono::duration<double>(bench::Clock::now() - drain).count();
  bench::Report("queued_tasks_drained", total / drain_seconds, "tasks/s", drain_seconds);
  if (sum != expected) {
    std::cerr << "wrong results: " << sum << " != " << expected << std::endl;
    return 1;
  }
  orb::Shutdown();
  return 0;
}
