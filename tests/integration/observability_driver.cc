// A workload for observability_test.sh (one job): 20 Square tasks, one task that
// throws, a detached actor "obs-keeper" that counts requests in a user metric and keeps
// a 2 MiB object in the store (and prints to its log), a 2 MiB argument pulled by a task on the node with the
// "far" resource, and a placement group. Then it reads the state API from C++:
//   squares 2470 | failed TaskError | far 2097152 | keeper 5
//   state failed=1 error=observability boom | state nodes=2 | bad filter: <why>
// and on stderr, the workers' lines: "(pid=N, node=ID) exploding now",
// "(Keeper pid=N, node=ID) keeper served 5".
#include <orb/api.h>
#include <orb/metric.h>
#include <orb/state.h>

#include <iostream>
#include <stdexcept>
#include <thread>

int Square(int x) { return x * x; }
ORB_REMOTE(Square);

int Explode(int) {
  std::cerr << "exploding now" << std::endl;  // reaches the driver's stderr with a prefix
  throw std::runtime_error("observability boom");
}
ORB_REMOTE(Explode);

size_t SizeOf(std::vector<uint8_t> bytes) { return bytes.size(); }
ORB_REMOTE(SizeOf);

class Keeper {
 public:
  static Keeper* Create() { return new Keeper(); }
  int Serve(int requests) {
    orb::Counter served("obs.requests", "requests the keeper served", "requests", {"route"});
    served.Inc(requests, {{"route", "/serve"}});
    if (!kept_) kept_ = orb::Put(std::vector<uint8_t>(2 << 20, 7));
    total_ += requests;
    std::cout << "keeper served " << total_ << std::endl;  // its worker's log, for orb logs
    return total_;
  }

 private:
  int total_ = 0;
  std::optional<orb::ObjectRef<std::vector<uint8_t>>> kept_;
};
ORB_REMOTE(Keeper::Create, &Keeper::Serve);

int main(int argc, char** argv) {
  orb::Init(argc, argv);
  std::vector<orb::ObjectRef<int>> squares;
  for (int i = 0; i < 20; ++i) squares.push_back(orb::Task(Square).Remote(i));
  int sum = 0;
  for (auto& r : squares) sum += *r.Get(60000);
  std::cout << "squares " << sum << std::endl;
  try {
    orb::Task(Explode).Remote(1).Get(60000);
    std::cout << "failed nothing" << std::endl;
  } catch (const orb::TaskError&) {
    std::cout << "failed TaskError" << std::endl;
  }
  auto big = orb::Put(std::vector<uint8_t>(2 << 20, 1));
  size_t far = *orb::Task(SizeOf).SetResource("far", 1).Remote(big).Get(60000);
  std::cout << "far " << far << std::endl;
  auto keeper = orb::Actor(Keeper::Create).SetName("obs-keeper").SetLifetime(orb::ActorLifetime::DETACHED).Remote();
  keeper.Task(&Keeper::Serve).Remote(2).Get(60000);
  int served = *keeper.Task(&Keeper::Serve).Remote(3).Get(60000);
  std::cout << "keeper " << served << std::endl;
  // What the workers printed reaches this driver's stderr within about half a second.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto pg = orb::CreatePlacementGroup({"obs-group", {{{"CPU", 1}}}, orb::PlacementStrategy::PACK});
  pg.Wait(30);

  // The executors' events reach the GCS within a second or so.
  std::vector<orb::state::TaskState> failed;
  for (int i = 0; i < 100; ++i) {
    failed = orb::state::ListTasks({{"state", "=", "FAILED"}});
    if (!failed.empty() && !failed[0].error_message.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::cout << "state failed=" << failed.size()
            << " error=" << (failed.empty() ? "-" : failed[0].error_message.substr(0, failed[0].error_message.find('\n')))
            << std::endl;
  std::cout << "state nodes=" << orb::state::List("nodes", {{"state", "=", "ALIVE"}}).size() << std::endl;
  try {
    orb::state::ListTasks({{"colour", "=", "red"}});
    std::cout << "bad filter accepted" << std::endl;
  } catch (const orb::Error& e) {
    std::cout << "bad filter: " << e.what() << std::endl;
  }
  orb::Shutdown();
  return 0;
}
