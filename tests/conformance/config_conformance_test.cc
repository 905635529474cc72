// OrbConfig as Ray programs set it: default_actor_lifetime (field and
// --orb_default_actor_lifetime), head_args for the embedded head, ray_namespace; and
// work no node can run: InfeasibleError where nothing could ever run it, pending
// where a node type the autoscaler may add could (the cluster of conformance_test.sh
// is started with an autoscaling config whose gpu_worker type has GPUs).
#include <gtest/gtest.h>
#include <orb/api.h>

#include "conformance.h"

int Return1() { return 1; }
std::string NamespaceInTask() { return orb::GetNamespace(); }
ORB_REMOTE(Return1, NamespaceInTask);

class Parent {
 public:
  static Parent* FactoryCreate() { return new Parent(); }
  std::string MakeChild(std::string name);
  int Ping() { return ++pings_; }
  std::string Namespace() { return orb::GetNamespace(); }

 private:
  int pings_ = 0;
};
std::string Parent::MakeChild(std::string name) {
  auto child = orb::Actor(Parent::FactoryCreate).SetName(name).Remote();  // no lifetime given
  child.Task(&Parent::Ping).Remote().Get();
  return name;
}
ORB_REMOTE(Parent::FactoryCreate, &Parent::MakeChild, &Parent::Ping, &Parent::Namespace);

namespace {
double Total(const std::string& resource) {
  double total = 0;
  for (const auto& node : orb::Nodes()) {
    auto it = node.resources_total.find(resource);
    if (it != node.resources_total.end()) total += it->second;
  }
  return total;
}
}  // namespace

TEST(ConfigConformance, DefaultActorLifetimeDetached) {
  if (orb::IsInitialized()) orb::Shutdown();
  orb::OrbConfig config;
  config.default_actor_lifetime = orb::ActorLifetime::DETACHED;
  orb::Init(config, cmd_argc, cmd_argv);
  auto parent = orb::Actor(Parent::FactoryCreate).Remote();
  parent.Task(&Parent::MakeChild).Remote("child_actor_name").Get(30000);
  auto child = orb::GetActor<Parent>("child_actor_name");
  ASSERT_TRUE(child);
  EXPECT_EQ(2, *child->Task(&Parent::Ping).Remote().Get());  // MakeChild pinged it once
  parent.Kill();
  EXPECT_EQ(3, *child->Task(&Parent::Ping).Remote().Get(30000));
  child->Kill();
  orb::Shutdown();
}

TEST(ConfigConformance, DefaultActorLifetimeFromTheCommandLine) {
  if (orb::IsInitialized()) orb::Shutdown();
  char program[] = "app", flag[] = "--orb_default_actor_lifetime=DETACHED", ns[] = "--orb_namespace=lifetime_flag";
  char* argv[] = {program, flag, ns, nullptr};
  orb::Init(3, argv);
  auto parent = orb::Actor(Parent::FactoryCreate).Remote();
  parent.Task(&Parent::MakeChild).Remote("flag_child").Get(30000);
  parent.Kill();
  auto child = orb::GetActor<Parent>("flag_child");
  ASSERT_TRUE(child);
  EXPECT_EQ(2, *child->Task(&Parent::Ping).Remote().Get(30000));  // alive after its parent
  child->Kill();
  orb::Shutdown();
  char bad[] = "--orb_default_actor_lifetime=forever";
  char* bad_argv[] = {program, bad, nullptr};
  EXPECT_THROW(orb::Init(2, bad_argv), orb::internal::OrbException);
}

TEST(ConfigConformance, HeadArgsForTheEmbeddedHead) {
  if (OnStartedCluster()) GTEST_SKIP() << "head_args apply only when the program starts its own head";
  if (orb::IsInitialized()) orb::Shutdown();
  orb::OrbConfig config;
  config.head_args = {"--num-cpus", "2", "--resources", "{\"resource1\":1,\"resource2\":2}"};
  orb::Init(config, cmd_argc, cmd_argv);
  EXPECT_EQ(Total("CPU"), 2);
  EXPECT_EQ(Total("resource1"), 1);
  EXPECT_EQ(Total("resource2"), 2);
  EXPECT_EQ(*orb::Task(Return1).SetResource("resource2", 2).Remote().Get(30000), 1);
  orb::Shutdown();
  config.head_args = {"--include-dashboard", "false"};  // a Ray flag orb does not have
  EXPECT_THROW(orb::Init(config, cmd_argc, cmd_argv), orb::internal::OrbException);
}

TEST(ConfigConformance, NamespaceForTheJob) {
  if (orb::IsInitialized()) orb::Shutdown();
  orb::OrbConfig config;
  config.ray_namespace = "test_get_current_namespace";
  orb::Init(config, cmd_argc, cmd_argv);
  EXPECT_EQ(orb::GetNamespace(), "test_get_current_namespace");
  EXPECT_EQ(*orb::Task(NamespaceInTask).Remote().Get(30000), "test_get_current_namespace");
  auto actor = orb::Actor(Parent::FactoryCreate).Remote();
  EXPECT_EQ(*actor.Task(&Parent::Namespace).Remote().Get(30000), "test_get_current_namespace");
  orb::Shutdown();
}

TEST(ConfigConformance, WorkNoNodeCanRun) {
  InitForTest();
  // Nothing could ever run it: InfeasibleError (after a grace period).
  auto impossible = orb::Task(Return1).SetResource("CPU", 10000).Remote();
  EXPECT_THROW(impossible.Get(60000), orb::InfeasibleError);
  // An actor that does not fit waits for room.
  auto big_actor = orb::Actor(Parent::FactoryCreate).SetResources({{"CPU", 10000.0}}).Remote();
  std::vector<orb::ObjectRef<int>> pings{big_actor.Task(&Parent::Ping).Remote()};
  EXPECT_EQ(orb::Wait(pings, 1, 3000).ready.size(), 0u);
  if (!OnStartedCluster()) return;
  // This cluster's autoscaler may add a gpu_worker: work only it could run waits.
  auto waits = orb::Task(Return1).SetResource("GPU", 1).Remote();
  std::vector<orb::ObjectRef<int>> waiting{waits};
  EXPECT_EQ(orb::Wait(waiting, 1, 6000).ready.size(), 0u);
}
