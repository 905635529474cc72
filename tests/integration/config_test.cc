// orb::Config end to end, one embedded cluster per test case (Init ... Shutdown, as a
// program that starts and stops orb more than once): head_args, the job's runtime
// environment, the default actor lifetime, namespaces.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "test_cluster.h"

namespace {

std::string GetEnvVar(std::string name) {
  const char* value = std::getenv(name.c_str());
  return value ? value : "";
}
std::string NamespaceHere() { return orb::GetNamespace(); }
ORB_REMOTE(GetEnvVar, NamespaceHere);

class Holder {
 public:
  static Holder* Create() { return new Holder(); }
  std::string Env(std::string name) { return GetEnvVar(name); }
  std::string Namespace() { return orb::GetNamespace(); }
  // Makes an actor of its own that names no lifetime.
  std::string MakeChild(std::string name) {
    auto child = orb::Actor(Holder::Create).SetName(name).Remote();
    return *child.Task(&Holder::Namespace).Remote().Get(30000);
  }
};
ORB_REMOTE(Holder::Create, &Holder::Env, &Holder::Namespace, &Holder::MakeChild);

// Stops the cluster when a test case ends, passed or not.
struct ShutdownAtEnd {
  ~ShutdownAtEnd() { orb::Shutdown(); }
};

double Total(const std::string& resource) {
  double total = 0;
  for (const auto& node : orb::Nodes()) {
    auto it = node.resources_total.find(resource);
    if (it != node.resources_total.end()) total += it->second;
  }
  return total;
}

}  // namespace

TEST_CASE("head_args are extra orb start --head flags for the embedded cluster", "[config]") {
  orb::Config config;
  config.head_args = {"--num-cpus", "3", "--resources", "{\"resource1\": 1, \"resource2\": 2}"};
  orb::Init(config);
  ShutdownAtEnd stop;
  CHECK(Total("CPU") == 3);
  CHECK(Total("resource1") == 1);
  CHECK(Total("resource2") == 2);
  CHECK(Total("memory") > 0);  // offered by default, as in Ray
  CHECK(Total("object_store_memory") == 0);  // not a schedulable resource here
}

TEST_CASE("bad head_args and a bad runtime_env fail Init with a clear error", "[config][errors]") {
  orb::Config config;
  config.head_args = {"--include-dashboard", "false"};
  CHECK_THROWS_WITH(orb::Init(config), Catch::Contains("head_args") && Catch::Contains("include-dashboard"));
  CHECK_FALSE(orb::IsInitialized());
  orb::Config env_config;
  env_config.runtime_env = orb::RuntimeEnv();
  env_config.runtime_env->Set("conda", std::string("env.yaml"));
  CHECK_THROWS_AS(orb::Init(env_config), orb::RuntimeEnvError);
  CHECK_FALSE(orb::IsInitialized());
}

TEST_CASE("the job's runtime environment reaches its tasks and actors; a task's adds to it", "[config][runtime_env]") {
  orb::Config config;
  config.num_cpus = 2;
  config.runtime_env = orb::RuntimeEnv();
  config.runtime_env->Set("env_vars", std::map<std::string, std::string>{{"JOB_KEY", "job"}, {"SHARED", "job"}});
  orb::Init(config);
  ShutdownAtEnd stop;
  CHECK(*orb::Task(GetEnvVar).Remote("JOB_KEY").Get(30000) == "job");
  auto holder = orb::Actor(Holder::Create).Remote();
  CHECK(*holder.Task(&Holder::Env).Remote("JOB_KEY").Get(30000) == "job");
  orb::RuntimeEnv task_env;
  task_env.Set("env_vars", std::map<std::string, std::string>{{"SHARED", "task"}});
  CHECK(*orb::Task(GetEnvVar).SetRuntimeEnv(task_env).Remote("SHARED").Get(30000) == "task");
  CHECK(*orb::Task(GetEnvVar).SetRuntimeEnv(task_env).Remote("JOB_KEY").Get(30000) == "job");
}

TEST_CASE("default_actor_lifetime DETACHED: actors that name no lifetime outlive their creator", "[config]") {
  orb::Config config;
  config.num_cpus = 1;
  config.default_actor_lifetime = orb::ActorLifetime::DETACHED;
  config.ray_namespace = "lifetimes";
  orb::Init(config);
  ShutdownAtEnd stop;
  auto parent = orb::Actor(Holder::Create).Remote();
  CHECK(*parent.Task(&Holder::MakeChild).Remote("child").Get(60000) == "lifetimes");
  parent.Kill();
  auto child = orb::GetActor<Holder>("child");
  REQUIRE(child);
  CHECK(*child->Task(&Holder::Namespace).Remote().Get(30000) == "lifetimes");
}

TEST_CASE("each job has a namespace of its own unless it names one", "[config]") {
  std::string first;
  {
    orb::Init();
    ShutdownAtEnd stop;
    first = orb::GetNamespace();
    CHECK(first.size() == 36);  // a UUID, as Ray's anonymous namespaces
    CHECK(*orb::Task(NamespaceHere).Remote().Get(30000) == first);
    auto holder = orb::Actor(Holder::Create).Remote();
    CHECK(*holder.Task(&Holder::Namespace).Remote().Get(30000) == first);
  }
  orb::Init();
  ShutdownAtEnd stop;
  CHECK(orb::GetNamespace() != first);
}
