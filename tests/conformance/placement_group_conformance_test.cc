// Placement groups as Ray C++ programs use them (bundles as unordered_maps, names,
// GetPlacementGroup / ById / GetAllPlacementGroups / GetState), tasks and actors in
// bundles, and the lifetime Ray gives them: a group ends with the job that made it
// unless it is detached.
#include <gtest/gtest.h>
#include <orb/api.h>
#include "conformance.h"

int Return1() { return 1; }
ORB_REMOTE(Return1);

class Member {
 public:
  static Member* FactoryCreate() { return new Member(); }
  int Ping() { return 1; }
};
ORB_REMOTE(Member::FactoryCreate, &Member::Ping);

namespace {

orb::PlacementGroup CreateSimpleGroup(const std::string& name) {
  std::vector<std::unordered_map<std::string, double>> bundles{{{"CPU", 1}}};
  orb::PlacementGroupCreationOptions options{name, bundles, orb::PlacementStrategy::PACK};
  return orb::CreatePlacementGroup(options);
}

// The group of that name, the live one if there is one.
const orb::PlacementGroup* Named(const std::vector<orb::PlacementGroup>& all, const std::string& name) {
  const orb::PlacementGroup* found = nullptr;
  for (const auto& pg : all) {
    if (pg.GetName() == name && (!found || pg.GetState() != orb::PlacementGroupState::REMOVED)) found = &pg;
  }
  return found;
}

double Cpus(bool available) {
  double cpus = 0;
  for (const auto& node : orb::Nodes()) {
    const auto& resources = available ? node.resources_available : node.resources_total;
    auto it = resources.find("CPU");
    if (node.alive && it != resources.end()) cpus += it->second;
  }
  return cpus;
}
double AvailableCpus() { return Cpus(true); }

}  // namespace

TEST(PlacementGroupConformance, CreateFindAndRemove) {
  InitForTest();
  auto first = CreateSimpleGroup("first_placement_group");
  EXPECT_TRUE(first.Wait(10));
  EXPECT_THROW(CreateSimpleGroup("first_placement_group"), orb::internal::OrbException);
  EXPECT_EQ(first.GetState(), orb::PlacementGroupState::CREATED);
  EXPECT_TRUE(Named(orb::GetAllPlacementGroups(), "first_placement_group"));
  EXPECT_EQ(orb::GetPlacementGroupById(first.GetID()).GetID(), first.GetID());
  EXPECT_EQ(orb::GetPlacementGroup("first_placement_group").GetID(), first.GetID());
  EXPECT_EQ(orb::GetPlacementGroup("first_placement_group").GetBundles().size(), 1u);
  orb::RemovePlacementGroup(first.GetID());
  EXPECT_EQ(orb::GetPlacementGroupById(first.GetID()).GetState(), orb::PlacementGroupState::REMOVED);
  EXPECT_TRUE(orb::GetPlacementGroup("not_exist_placement_group").GetID().empty());
  orb::RemovePlacementGroup(first.GetID());  // again: nothing happens
}

TEST(PlacementGroupConformance, TooLargeToPlaceWaitsUntilRemoved) {
  InitForTest();
  std::vector<std::unordered_map<std::string, double>> bundles{{{"CPU", 10000}}};
  auto huge = orb::CreatePlacementGroup({"huge_group", bundles, orb::PlacementStrategy::PACK});
  EXPECT_FALSE(huge.Wait(3));
  EXPECT_EQ(huge.GetState(), orb::PlacementGroupState::PENDING);
  orb::RemovePlacementGroup(huge.GetID());
  EXPECT_EQ(orb::GetPlacementGroupById(huge.GetID()).GetState(), orb::PlacementGroupState::REMOVED);
}

TEST(PlacementGroupConformance, TasksAndActorsInBundles) {
  InitForTest();
  auto group = CreateSimpleGroup("work_group");
  ASSERT_TRUE(group.Wait(10));
  EXPECT_EQ(*orb::Task(Return1).SetResources({{"CPU", 1.0}}).SetPlacementGroup(group, 0).Remote().Get(30000), 1);
  auto member = orb::Actor(Member::FactoryCreate).SetResources({{"CPU", 1.0}}).SetPlacementGroup(group, 0).Remote();
  EXPECT_EQ(*member.Task(&Member::Ping).Remote().Get(30000), 1);
  // More than the bundle holds: it waits.
  auto too_big = orb::Actor(Member::FactoryCreate).SetResources({{"CPU", 2.0}}).SetPlacementGroup(group, 0).Remote();
  std::vector<orb::ObjectRef<int>> pings{too_big.Task(&Member::Ping).Remote()};
  EXPECT_EQ(orb::Wait(pings, 1, 3000).ready.size(), 0u);
  orb::RemovePlacementGroup(group.GetID());
}

// A second driver (this program again, --driver-of=...) makes one group of its job
// and one detached group, then ends.
TEST(PlacementGroupConformance, GroupsEndWithTheirJobUnlessDetached) {
  InitForTest();
  // What earlier tests held is given back first.
  double cpus_before = Cpus(false);
  ASSERT_TRUE(WaitUntil([&] { return AvailableCpus() == cpus_before; }, std::chrono::seconds(20)))
      << "available CPUs " << AvailableCpus() << " of " << cpus_before;
  std::string address = orb::GetRuntimeContext().GetGcsAddress();
  ASSERT_FALSE(address.empty());
  ASSERT_EQ(RunAsSecondDriver("groups", address), 0);
  const orb::PlacementGroup* ended = nullptr;
  EXPECT_TRUE(WaitUntil(
      [&] {
        static std::vector<orb::PlacementGroup> all;
        all = orb::GetAllPlacementGroups();
        ended = Named(all, "job_group");
        return ended && ended->GetState() == orb::PlacementGroupState::REMOVED;
      },
      std::chrono::seconds(10)));
  auto all = orb::GetAllPlacementGroups();
  const orb::PlacementGroup* kept = Named(all, "detached_group");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->GetState(), orb::PlacementGroupState::CREATED);
  EXPECT_TRUE(WaitUntil([&] { return AvailableCpus() == cpus_before - 1; }, std::chrono::seconds(10)))
      << "available CPUs " << AvailableCpus() << ", before " << cpus_before;
  orb::RemovePlacementGroup(kept->GetID());
  EXPECT_TRUE(WaitUntil([&] { return AvailableCpus() == cpus_before; }, std::chrono::seconds(10)));
}

// The second driver of GroupsEndWithTheirJobUnlessDetached (see conformance_main.cc).
int RunSecondDriver(const std::string& role, const std::string& address) {
  if (role != "groups") return 2;
  orb::OrbConfig config;
  config.address = address;
  orb::Init(config);
  orb::PlacementGroupCreationOptions job{"job_group", {{{"CPU", 1}}}, orb::PlacementStrategy::PACK};
  orb::PlacementGroupCreationOptions detached{"detached_group", {{{"CPU", 1}}}, orb::PlacementStrategy::PACK};
  detached.SetLifetime(orb::ActorLifetime::DETACHED);
  bool ok = orb::CreatePlacementGroup(job).Wait(30) && orb::CreatePlacementGroup(detached).Wait(30);
  orb::Shutdown();  // the job ends; the program forgot RemovePlacementGroup
  return ok ? 0 : 1;
}
