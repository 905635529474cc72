// Actors as Ray C++ programs use them: overloaded factories picked with ORB_FUNC,
// ordered calls, calls whose arguments are earlier calls' results on the same actor,
// names and namespaces, Kill with and without restart (the constructor knows it was
// restarted), ExitActor, concurrency, handles as arguments and results, calls with a
// name and resources, and Ray's exception names for a dead actor.
#include <gtest/gtest.h>
#include <orb/api.h>
#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>

#include "conformance.h"

class Tally {
 public:
  explicit Tally(int start) : count_(start), restarted_in_constructor_(orb::WasCurrentActorRestarted()) {}
  static Tally* FactoryCreate() { return new Tally(0); }
  static Tally* FactoryCreate(int start) { return new Tally(start); }
  static Tally* FactoryCreate(int a, int b) { return new Tally(a + b); }
  static Tally* FailingCreate() { throw std::invalid_argument("cannot start"); }

  int Add(int x) { return count_ += x; }
  int Get() const { return count_; }
  uint64_t Pid() const { return ::getpid(); }
  bool RestartedInConstructor() const { return restarted_in_constructor_; }
  bool RestartedNow() const { return orb::WasCurrentActorRestarted(); }
  std::string Namespace() const { return orb::GetNamespace(); }
  int Exit() {
    orb::ExitActor();
    return 0;
  }
  // Makes a named actor of its own and hands its handle back.
  orb::ActorHandle<Tally> MakeChild(std::string name) {
    auto child = orb::Actor(ORB_FUNC(Tally::FactoryCreate)).SetName(name).Remote();
    child.Task(&Tally::Get).Remote().Get();
    return child;
  }
  int AddThrough(orb::ActorHandle<Tally> other) { return *other.Task(&Tally::Add).Remote(1).Get(); }

 private:
  int count_;
  bool restarted_in_constructor_;
};
ORB_REMOTE(ORB_FUNC(Tally::FactoryCreate), ORB_FUNC(Tally::FactoryCreate, int), ORB_FUNC(Tally::FactoryCreate, int, int),
           Tally::FailingCreate, &Tally::Add, &Tally::Get, &Tally::Pid, &Tally::RestartedInConstructor,
           &Tally::RestartedNow, &Tally::Namespace, &Tally::Exit, &Tally::MakeChild, &Tally::AddThrough);

// Three concurrent calls that each wait until all three run.
class Rendezvous {
 public:
  static Rendezvous* FactoryCreate() { return new Rendezvous(); }
  std::string Meet() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--left_ == 0) cv_.notify_all();
    return cv_.wait_for(lock, std::chrono::seconds(20), [this] { return left_ <= 0; }) ? "ok" : "alone";
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int left_ = 3;
};
ORB_REMOTE(Rendezvous::FactoryCreate, &Rendezvous::Meet);

namespace {
bool ProcessAlive(uint64_t pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH; }
}  // namespace

TEST(ActorConformance, OverloadedFactoriesAndOrderedCalls) {
  InitForTest();
  auto a0 = orb::Actor(ORB_FUNC(Tally::FactoryCreate)).Remote();
  auto a1 = orb::Actor(ORB_FUNC(Tally::FactoryCreate, int)).Remote(10);
  auto a2 = orb::Actor(ORB_FUNC(Tally::FactoryCreate, int, int)).Remote(6, 1);
  EXPECT_EQ(*a2.Task(&Tally::Get).Remote().Get(), 7);
  EXPECT_EQ(*a0.Task(&Tally::Add).Remote(1).Get(), 1);
  std::vector<orb::ObjectRef<int>> sums;
  for (int i = 1; i <= 4; ++i) sums.push_back(a1.Task(&Tally::Add).Remote(i));
  EXPECT_EQ(*orb::Get(sums).back(), 20);
}

TEST(ActorConformance, ArgumentsFromTheSameActorsEarlierCalls) {
  InitForTest();
  auto actor = orb::Actor(ORB_FUNC(Tally::FactoryCreate, int)).Remote(1);
  auto r1 = actor.Task(&Tally::Add).Remote(1);   // 2
  auto r2 = actor.Task(&Tally::Add).Remote(r1);  // 4
  auto r3 = actor.Task(&Tally::Add).Remote(r2);  // 8
  auto r4 = actor.Task(&Tally::Add).Remote(r3);  // 16
  EXPECT_EQ(*r4.Get(30000), 16);
  EXPECT_EQ(*r1.Get(), 2);
  // And from another actor's, and from tasks.
  auto other = orb::Actor(ORB_FUNC(Tally::FactoryCreate, int, int)).Remote(r2, 0);
  EXPECT_EQ(*other.Task(&Tally::Add).Remote(r3).Get(30000), 12);
}

TEST(ActorConformance, NamesAndNamespaces) {
  InitForTest();
  auto in_isolated = orb::Actor(ORB_FUNC(Tally::FactoryCreate)).SetName("isolated_actor", "isolated_ns").Remote();
  EXPECT_EQ(*in_isolated.Task(&Tally::Namespace).Remote().Get(), orb::GetNamespace());  // the job's, not the name's
  EXPECT_FALSE(orb::GetActor<Tally>("isolated_actor"));
  EXPECT_TRUE(orb::GetActor<Tally>("isolated_actor", "isolated_ns"));
  EXPECT_FALSE(orb::GetActor<Tally>("isolated_actor", "other_ns"));
  auto in_job = orb::Actor(ORB_FUNC(Tally::FactoryCreate)).SetName("job_actor").Remote();
  in_job.Task(&Tally::Get).Remote().Get();
  auto found = orb::GetActor<Tally>("job_actor");
  ASSERT_TRUE(found);
  EXPECT_EQ(*found->Task(&Tally::Add).Remote(3).Get(), 3);
  EXPECT_FALSE(orb::GetActor<Tally>("job_actor", "isolated_ns"));
  EXPECT_FALSE(orb::GetActor<Tally>("not_exist_actor"));
  in_isolated.Kill();
  in_job.Kill();
}

TEST(ActorConformance, KillRestartAndTheConstructorKnows) {
  InitForTest();
  auto actor = orb::Actor(ORB_FUNC(Tally::FactoryCreate)).SetMaxRestarts(1).SetName("restartable").Remote();
  EXPECT_EQ(*actor.Task(&Tally::Add).Remote(5).Get(), 5);
  EXPECT_FALSE(*actor.Task(&Tally::RestartedInConstructor).Remote().Get());
  EXPECT_FALSE(*actor.Task(&Tally::RestartedNow).Remote().Get());
  actor.Kill(/*no_restart=*/false);
  // The next calls reach the restarted actor: its state starts over, and its
  // constructor could restore it, knowing it was restarted.
  EXPECT_TRUE(WaitUntil(
      [&] {
        try {
          return *actor.Task(&Tally::RestartedInConstructor).Remote().Get(5000);
        } catch (const orb::internal::OrbException&) {
          return false;
        }
      },
      std::chrono::seconds(30)));
  EXPECT_TRUE(*actor.Task(&Tally::RestartedNow).Remote().Get());
  EXPECT_EQ(*actor.Task(&Tally::Add).Remote(1).Get(), 1);
  actor.Kill();
  EXPECT_THROW(actor.Task(&Tally::Add).Remote(1).Get(30000), orb::internal::OrbActorException);
  EXPECT_FALSE(orb::GetActor<Tally>("restartable"));
}

TEST(ActorConformance, ExitActorEndsTheProcess) {
  InitForTest();
  auto actor = orb::Actor(ORB_FUNC(Tally::FactoryCreate)).Remote();
  uint64_t pid = *actor.Task(&Tally::Pid).Remote().Get(30000);
  EXPECT_THROW(actor.Task(&Tally::Exit).Remote().Get(30000), orb::internal::OrbActorException);
  EXPECT_THROW(actor.Task(&Tally::Get).Remote().Get(30000), orb::internal::OrbActorException);
  if (!OnStartedCluster() || orb::Nodes().size() == 1) {
    EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(pid); }, std::chrono::seconds(10)));
  }
}

TEST(ActorConformance, ConstructorFailureIsADeadActor) {
  InitForTest();
  auto broken = orb::Actor(Tally::FailingCreate).Remote();
  try {
    broken.Task(&Tally::Get).Remote().Get(30000);
    FAIL() << "expected an actor exception";
  } catch (const orb::internal::OrbActorException& e) {
    EXPECT_NE(std::string(e.what()).find("cannot start"), std::string::npos) << e.what();
  }
}

TEST(ActorConformance, ConcurrentCallsAndTimeouts) {
  InitForTest();
  auto three = orb::Actor(Rendezvous::FactoryCreate).SetMaxConcurrency(3).Remote();
  std::vector<orb::ObjectRef<std::string>> met;
  for (int i = 0; i < 3; ++i) met.push_back(three.Task(&Rendezvous::Meet).Remote());
  for (const auto& m : orb::Get(met, 60000)) EXPECT_EQ(*m, "ok");
  auto two = orb::Actor(Rendezvous::FactoryCreate).SetMaxConcurrency(2).Remote();
  auto stuck = two.Task(&Rendezvous::Meet).Remote();
  EXPECT_THROW(stuck.Get(1000), orb::internal::OrbTimeoutException);
}

TEST(ActorConformance, HandlesAsArgumentsAndResults) {
  InitForTest();
  auto first = orb::Actor(ORB_FUNC(Tally::FactoryCreate)).Remote();
  auto second = orb::Actor(ORB_FUNC(Tally::FactoryCreate)).Remote();
  EXPECT_EQ(*second.Task(&Tally::AddThrough).Remote(first).Get(30000), 1);
  auto child = *first.Task(&Tally::MakeChild).Remote("child_of_first").Get(30000);
  EXPECT_EQ(*child.Task(&Tally::Add).Remote(2).Get(30000), 2);
  auto by_name = orb::GetActor<Tally>("child_of_first");
  ASSERT_TRUE(by_name);
  EXPECT_EQ(*by_name->Task(&Tally::Add).Remote(2).Get(30000), 4);
}

TEST(ActorConformance, CallsWithANameAndResources) {
  InitForTest();
  auto actor = orb::Actor(ORB_FUNC(Tally::FactoryCreate)).SetResources({{"CPU", 1.0}}).Remote();
  auto r = actor.Task(&Tally::Add).SetName("named_actor_task").SetResources({{"CPU", 1.0}}).Remote(7);
  EXPECT_EQ(*r.Get(30000), 7);
  EXPECT_THROW(actor.Task(&Tally::Add).SetResource("CPU", -2).Remote(1), orb::internal::OrbException);
}
