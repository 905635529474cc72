// OrbConfig::local_mode, as Ray's local-mode tests use it: everything runs in this
// process (no daemons), with the same API: Put/Get/Wait, tasks by value and by
// reference, ObjectRef parameters, actors, named actors, placement groups, errors.
#include <gtest/gtest.h>
#include <orb/api.h>
#include <unistd.h>

#include <future>

#include "conformance.h"

int Return1() { return 1; }
int Plus1(int x) { return x + 1; }
int Plus(int x, int y) { return x + y; }
int Triple(int x, int y, int z) { return x + y + z; }
int Pid() { return ::getpid(); }
std::string GetVal(orb::ObjectRef<std::string> obj) { return *obj.Get(); }
int GetIntVal(orb::ObjectRef<orb::ObjectRef<int>> obj) { return *obj.Get()->Get(); }
std::vector<std::shared_ptr<int>> GetList(int, std::vector<orb::ObjectRef<int>> list) { return orb::Get(list); }
void Fails() { throw std::out_of_range("index 7"); }
ORB_REMOTE(Return1, Plus1, Plus, Triple, Pid, GetVal, GetIntVal, GetList, Fails);

std::promise<bool> g_release;
bool BlockUntilReleased() { return g_release.get_future().get(); }
bool WaitThenRelease(orb::ObjectRef<bool> arg) {
  std::vector<orb::ObjectRef<bool>> refs{arg};
  bool unready_first = orb::Wait(refs, 1, 500).ready.empty();
  g_release.set_value(true);
  return unready_first && *orb::Get(arg);
}
ORB_REMOTE(BlockUntilReleased, WaitThenRelease);

class Adder {
 public:
  static Adder* FactoryCreate() { return new Adder(); }
  int Add(int x) { return count_ += x; }
  std::vector<std::shared_ptr<int>> GetList(int, std::vector<orb::ObjectRef<int>> list) { return orb::Get(list); }

 private:
  int count_ = 0;
};
ORB_REMOTE(Adder::FactoryCreate, &Adder::Add, &Adder::GetList);

class LocalModeConformance : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    orb::OrbConfig config;
    config.local_mode = true;
    orb::Init(config);
  }
};

TEST_F(LocalModeConformance, RunsInThisProcess) {
  EXPECT_TRUE(orb::IsLocalMode());
  EXPECT_EQ(*orb::Task(Pid).Remote().Get(), ::getpid());
  EXPECT_EQ(orb::GetRuntimeContext().GetGcsAddress(), "");
}

TEST_F(LocalModeConformance, PutGetWaitAndTasks) {
  EXPECT_EQ(*orb::Put(100).Get(), 100);
  auto r0 = orb::Task(Return1).Remote();
  auto r1 = orb::Task(Plus1).Remote(r0);
  auto r2 = orb::Task(Plus).Remote(r1, 3);
  auto r3 = orb::Task(Triple).Remote(1, 2, 3);
  std::vector<orb::ObjectRef<int>> all{r0, r1, r2, r3};
  EXPECT_EQ(orb::Wait(all, 4, 5000).ready.size(), 4u);
  auto values = orb::Get(all);
  EXPECT_EQ(*values[2], 5);
  EXPECT_EQ(*values[3], 6);
}

TEST_F(LocalModeConformance, RefParametersAndWaitingInsideTasks) {
  auto obj = orb::Put(std::string("aaa"));
  EXPECT_EQ(*orb::Task(GetVal).Remote(obj).Get(), "aaa");
  auto obj0 = orb::Put(42);
  auto obj1 = orb::Put(obj0);
  EXPECT_EQ(*orb::Task(GetIntVal).Remote(obj1).Get(), 42);
  std::vector<orb::ObjectRef<int>> list{obj0, obj0};
  EXPECT_EQ(orb::Task(GetList).Remote(1, list).Get()->size(), 2u);
  auto blocked = orb::Task(BlockUntilReleased).Remote();
  EXPECT_TRUE(*orb::Task(WaitThenRelease).Remote(blocked).Get(10000));
}

TEST_F(LocalModeConformance, ActorsAndNames) {
  auto actor = orb::Actor(Adder::FactoryCreate).SetName("local_named").Remote();
  auto a1 = actor.Task(&Adder::Add).Remote(1);
  auto a2 = actor.Task(&Adder::Add).Remote(a1);
  EXPECT_EQ(*a2.Get(), 2);
  auto obj0 = orb::Put(3);
  std::vector<orb::ObjectRef<int>> list{obj0, obj0};
  EXPECT_EQ(actor.Task(&Adder::GetList).Remote(obj0, list).Get()->size(), 2u);
  auto found = orb::GetActor<Adder>("local_named");
  ASSERT_TRUE(found);
  EXPECT_EQ(*found->Task(&Adder::Add).Remote(1).Get(), 3);
  EXPECT_FALSE(orb::GetActor<Adder>("not_exist_actor"));
}

TEST_F(LocalModeConformance, PlacementGroupsAndErrors) {
  std::vector<std::unordered_map<std::string, double>> bundles{{{"CPU", 1}}};
  auto pg = orb::CreatePlacementGroup({"local_group", bundles, orb::PlacementStrategy::PACK});
  EXPECT_TRUE(pg.Wait(10));
  orb::RemovePlacementGroup(pg.GetID());
  EXPECT_THROW(orb::Task(Fails).Remote().Get(), orb::internal::OrbTaskException);
}
