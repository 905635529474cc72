// Actors as a user outside orb writes them, against the public API contract only:
// 100 ordered calls, a named actor found by name, Kill, a crash without restarts, a
// crash with restarts (constructor rerun in a new process), eight small actors at
// once, handles passed into tasks. Exits 0 when every check held.
#include <orb/api.h>
#include <unistd.h>

#include <iostream>
#include <set>
#include <string>
#include <vector>

class Counter {
 public:
  static Counter* Create(int start) { return new Counter(start); }
  explicit Counter(int start) : n_(start) {}
  int Add(int x) { return n_ += x; }
  int Pid() const { return static_cast<int>(::getpid()); }
  bool Restarted() const { return orb::GetRuntimeContext().WasCurrentActorRestarted(); }
  int Crash() { std::_Exit(1); }

 private:
  int n_;
};
ORB_REMOTE(Counter::Create, &Counter::Add, &Counter::Pid, &Counter::Restarted, &Counter::Crash);

int AddVia(orb::ActorHandle<Counter> counter, int x) { return *counter.Task(&Counter::Add).Remote(x).Get(); }
ORB_REMOTE(AddVia);

namespace {

int failures = 0;
void Check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok: " : "FAILED: ") << what << std::endl;
  failures += ok ? 0 : 1;
}

template <class F>
bool DiesWithActorDiedError(F call) {
  try {
    call();
  } catch (const orb::ActorDiedError&) {
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  orb::Init(argc, argv);

  auto ordered = orb::Actor(Counter::Create).Remote(0);
  std::vector<orb::ObjectRef<int>> sums;
  for (int i = 1; i <= 100; ++i) sums.push_back(ordered.Task(&Counter::Add).Remote(i));
  bool in_order = true;
  auto values = orb::Get(sums);
  for (int i = 1; i <= 100; ++i) in_order = in_order && *values[i - 1] == i * (i + 1) / 2;
  Check(in_order, "100 calls ran in the order they were made");

  orb::Actor(Counter::Create).SetName("tour-counter").Remote(41);
  auto found = orb::GetActor<Counter>("tour-counter");
  Check(found && *found->Task(&Counter::Add).Remote(1).Get() == 42, "a named actor is found by name");

  found->Kill();
  Check(DiesWithActorDiedError([&] { found->Task(&Counter::Add).Remote(1).Get(30000); }),
        "a killed actor's calls throw ActorDiedError");

  auto fragile = orb::Actor(Counter::Create).Remote(0);
  Check(DiesWithActorDiedError([&] { fragile.Task(&Counter::Crash).Remote().Get(30000); }) &&
            DiesWithActorDiedError([&] { fragile.Task(&Counter::Add).Remote(1).Get(30000); }),
        "a crash without restarts gives ActorDiedError");

  auto sturdy = orb::Actor(Counter::Create).SetMaxRestarts(1).Remote(10);
  int pid = *sturdy.Task(&Counter::Pid).Remote().Get();
  sturdy.Task(&Counter::Add).Remote(5).Get();
  DiesWithActorDiedError([&] { sturdy.Task(&Counter::Crash).Remote().Get(30000); });
  Check(*sturdy.Task(&Counter::Add).Remote(1).Get(30000) == 11 && *sturdy.Task(&Counter::Restarted).Remote().Get() &&
            *sturdy.Task(&Counter::Pid).Remote().Get() != pid,
        "a crash with restarts continues in a new process, constructor rerun");

  std::vector<orb::ActorHandle<Counter>> eight;
  for (int i = 0; i < 8; ++i) eight.push_back(orb::Actor(Counter::Create).Remote(i));
  std::vector<orb::ObjectRef<int>> pids;
  for (auto& a : eight) pids.push_back(a.Task(&Counter::Pid).Remote());
  std::set<int> distinct;
  for (const auto& p : orb::Get(pids, 60000)) distinct.insert(*p);
  Check(distinct.size() == 8, "eight small actors at once, each its own process");

  Check(*orb::Task(AddVia).Remote(ordered, 1).Get(30000) == 5051, "a handle passed into a task reaches the actor");

  std::cout << (failures == 0 ? "actor tour ok" : "actor tour failed") << std::endl;
  orb::Shutdown();
  return failures == 0 ? 0 : 1;
}
