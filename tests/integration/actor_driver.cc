// A driver for actor_lifetime_test.sh: each run is one job.
//   actor_driver --orb-address=A create-detached NAME   detached named Counter(5), Add(1)
//   actor_driver --orb-address=A create-owned NAME      named Counter(5) owned by this job
//   actor_driver --orb-address=A create-owned-and-die NAME   ...then exits without Shutdown
//   actor_driver --orb-address=A call NAME              Add(1) on the named actor
//   actor_driver --orb-address=A create-group NAME      a placement group of this job
//   actor_driver --orb-address=A create-detached-group NAME   one that outlives the job
//   actor_driver --orb-address=A group-state NAME       the named group's state
//   actor_driver --orb-address=A hold-far NAME          a task holding {"far": 1} until killed
//   actor_driver --orb-address=A create-restartable NAME   detached, one restart allowed
//   actor_driver --orb-address=A pid NAME               the named actor's process ID
//   actor_driver --orb-address=A lend NAME              puts a 64 MiB object, lends it to a new
//                                                       detached Keeper NAME, holds a lease,
//                                                       prints "lent", then waits to be killed
//   actor_driver --orb-address=A read-kept NAME         what Keeper NAME reads of its object
// Prints "value N", "group STATE", "pid N", "lent", "sum N", "OwnerDiedError: ..." or
// "not found".
#include <orb/api.h>
#include <unistd.h>

#include <cstring>
#include <iostream>

#include <fstream>
#include <thread>

int HoldFor(int seconds) {
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  return seconds;
}
ORB_REMOTE(HoldFor);

class Counter {
 public:
  static Counter* Create(int start) { return new Counter{start}; }
  int Add(int x) { return n += x; }
  int Pid() { return static_cast<int>(::getpid()); }
  int n;
};
ORB_REMOTE(Counter::Create, &Counter::Add, &Counter::Pid);

// Keeps refs it borrowed from another job's driver.
class Keeper {
 public:
  static Keeper* Create() { return new Keeper(); }
  bool Keep(std::vector<orb::ObjectRef<std::vector<uint8_t>>> refs) {
    refs_ = std::move(refs);
    return true;
  }
  std::string Read() {
    try {
      auto v = orb::Get(refs_.at(0), 30000);
      int64_t sum = 0;
      for (auto x : *v) sum += x;
      return "sum " + std::to_string(sum);
    } catch (const orb::OwnerDiedError& e) {
      return std::string("OwnerDiedError: ") + e.what();
    } catch (const orb::Error& e) {
      return std::string("other error: ") + e.what();
    }
  }
  std::vector<orb::ObjectRef<std::vector<uint8_t>>> refs_;
};
ORB_REMOTE(Keeper::Create, &Keeper::Keep, &Keeper::Read);

int main(int argc, char** argv) {
  orb::Init(argc, argv);
  std::string command, name;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--orb-", 6) == 0) continue;
    (command.empty() ? command : name) = argv[i];
  }
  if (command == "hold-far") {
    // Leased on the node that has "far"; NAME is a file written once the task runs.
    auto held = orb::Task(HoldFor).SetResource("far", 1).Remote(600);
    std::vector<orb::ObjectRef<int>> refs{held};
    orb::Wait(refs, 1, 1000);
    std::ofstream(name) << "holding";
    std::this_thread::sleep_for(std::chrono::seconds(600));
    return 0;
 } else if (command == "lend") {
    auto lent = orb::Put(std::vector<uint8_t>(64 << 20, 2));  // in the object store, visible in `orb status`
    auto held = orb::Task(HoldFor).Remote(600);                // a lease this job holds
    orb::Wait(std::vector<orb::ObjectRef<int>>{held}, 1, 1000);
    auto keeper = orb::Actor(Keeper::Create).SetName(name).SetLifetime(orb::ActorLifetime::DETACHED).Remote();
    keeper.Task(&Keeper::Keep).Remote(std::vector<orb::ObjectRef<std::vector<uint8_t>>>{lent}).Get(30000);
    std::cout << "lent" << std::endl;
    std::this_thread::sleep_for(std::chrono::seconds(600));
    return 0;
  } else if (command == "read-kept") {
    auto keeper = orb::GetActor<Keeper>(name);
    std::cout << (keeper ? *keeper->Task(&Keeper::Read).Remote().Get(60000) : "not found") << std::endl;
  } else if (command == "create-group" || command == "create-detached-group") {
    orb::PlacementGroupCreationOptions options{name, {{{"CPU", 2}}}, orb::PlacementStrategy::PACK};
    if (command == "create-detached-group") options.SetLifetime(orb::ActorLifetime::DETACHED);
    auto pg = orb::CreatePlacementGroup(options);
    std::cout << "group " << (pg.Wait(30) ? "CREATED" : "PENDING") << std::endl;
  } else if (command == "group-state") {
    auto pg = orb::GetPlacementGroup(name);
    if (pg.Empty()) {
      std::cout << "not found" << std::endl;
    } else {
      std::cout << "group " << (pg.GetState() == orb::PlacementGroupState::CREATED ? "CREATED" : "OTHER") << std::endl;
    }
  } else if (command == "pid") {
    auto actor = orb::GetActor<Counter>(name);
    std::cout << (actor ? "pid " + std::to_string(*actor->Task(&Counter::Pid).Remote().Get(30000)) : "not found")
              << std::endl;
  } else if (command == "call") {
    auto actor = orb::GetActor<Counter>(name);
    if (!actor) {
      std::cout << "not found" << std::endl;
    } else {
      std::cout << "value " << *actor->Task(&Counter::Add).Remote(1).Get(30000) << std::endl;
    }
  } else {
    auto creator = orb::Actor(Counter::Create).SetName(name);
    if (command == "create-detached" || command == "create-restartable") {
      creator.SetLifetime(orb::ActorLifetime::DETACHED);
    }
    if (command == "create-restartable") creator.SetMaxRestarts(1);
    auto actor = creator.Remote(5);
    std::cout << "value " << *actor.Task(&Counter::Add).Remote(1).Get(30000) << std::endl;
    if (command == "create-owned-and-die") std::_Exit(0);
  }
  orb::Shutdown();
  return 0;
}
