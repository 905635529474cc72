// RuntimeEnv as Ray's C++ API has it (fields set by name, kept as JSON, user types with
// to_json/from_json through the global `json`), and what orb runs of it: env_vars and
// working_dir per task, per actor and per job, code_search_path per job and per task,
// and orb::internal::OrbRuntimeEnvException for what is malformed or unsupported.
#include <gtest/gtest.h>
#include <orb/api.h>

#include <filesystem>

#include "conformance.h"
#include "job_functions.h"

std::string GetEnvVar(std::string key) {
  const char* value = std::getenv(key.c_str());
  return value ? value : "";
}
std::string CurrentDir() { return std::filesystem::current_path().string(); }
ORB_REMOTE(GetEnvVar, CurrentDir);

class EnvReader {
 public:
  static EnvReader* FactoryCreate() { return new EnvReader(); }
  std::string GetEnvVar(std::string key) { return ::GetEnvVar(key); }
};
ORB_REMOTE(EnvReader::FactoryCreate, &EnvReader::GetEnvVar);

class Pip {
 public:
  std::vector<std::string> packages;
  bool pip_check = false;
};
void to_json(json& j, const Pip& pip) { j = json{{"packages", pip.packages}, {"pip_check", pip.pip_check}}; }
void from_json(const json& j, Pip& pip) {
  j.at("packages").get_to(pip.packages);
  j.at("pip_check").get_to(pip.pip_check);
}

TEST(RuntimeEnvConformance, FieldsAsJson) {
  orb::RuntimeEnv env;
  env.Set("pip", Pip{{"requests"}, true});
  env.Set("working_dir", std::string("/tmp"));
  auto copy = orb::RuntimeEnv::Deserialize(env.Serialize());
  EXPECT_EQ(copy.Get<Pip>("pip").packages, std::vector<std::string>{"requests"});
  EXPECT_EQ(copy.Get<std::string>("working_dir"), "/tmp");
  orb::RuntimeEnv raw;
  std::string pip_json = R"({"packages":["requests","tensorflow"],"pip_check":false})";
  raw.SetJsonStr("pip", pip_json);
  EXPECT_EQ(raw.GetJsonStr("pip"), pip_json);
  EXPECT_THROW(raw.Get<std::string>("working_dir"), orb::internal::OrbRuntimeEnvException);
  EXPECT_THROW(copy.Get<Pip>("working_dir"), orb::internal::OrbRuntimeEnvException);
  EXPECT_THROW(raw.SetJsonStr("pip", "{123"), orb::internal::OrbRuntimeEnvException);
  EXPECT_TRUE(raw.Remove("pip"));
  EXPECT_FALSE(raw.Remove("pip"));
  EXPECT_TRUE(raw.Empty());
}

TEST(RuntimeEnvConformance, TaskAndActorEnvironments) {
  InitForTest();
  EXPECT_EQ(*orb::Task(GetEnvVar).Remote("KEY1").Get(30000), "");
  orb::RuntimeEnv env;
  env.Set("env_vars", std::map<std::string, std::string>{{"KEY1", "value1"}});
  EXPECT_EQ(*orb::Task(GetEnvVar).SetRuntimeEnv(env).Remote("KEY1").Get(30000), "value1");
  orb::RuntimeEnv actor_env;
  actor_env.Set("env_vars", std::map<std::string, std::string>{{"KEY1", "value2"}});
  auto reader = orb::Actor(EnvReader::FactoryCreate).SetRuntimeEnv(actor_env).Remote();
  EXPECT_EQ(*reader.Task(&EnvReader::GetEnvVar).Remote("KEY1").Get(30000), "value2");
  orb::RuntimeEnv in_tmp;
  in_tmp.Set("working_dir", std::string("/tmp"));
  EXPECT_EQ(*orb::Task(CurrentDir).SetRuntimeEnv(in_tmp).Remote().Get(30000), "/tmp");
  orb::RuntimeEnv pip;
  pip.Set("pip", Pip{{"requests"}, false});
  EXPECT_THROW(orb::Task(GetEnvVar).SetRuntimeEnv(pip).Remote("KEY1"), orb::internal::OrbRuntimeEnvException);
  orb::RuntimeEnv nowhere;
  nowhere.Set("working_dir", std::string("/no/such/directory"));
  EXPECT_THROW(orb::Task(CurrentDir).SetRuntimeEnv(nowhere).Remote().Get(30000),
               orb::internal::OrbRuntimeEnvException);
}

TEST(RuntimeEnvConformance, JobEnvironment) {
  if (orb::IsInitialized()) orb::Shutdown();
  orb::OrbConfig config;
  orb::RuntimeEnv env;
  env.Set("env_vars", std::map<std::string, std::string>{{"KEY1", "job_value"}});
  config.runtime_env = env;
  orb::Init(config, cmd_argc, cmd_argv);
  EXPECT_EQ(*orb::Task(GetEnvVar).Remote("KEY1").Get(30000), "job_value");
  auto reader = orb::Actor(EnvReader::FactoryCreate).Remote();
  EXPECT_EQ(*reader.Task(&EnvReader::GetEnvVar).Remote("KEY1").Get(30000), "job_value");
  orb::Shutdown();
}

TEST(RuntimeEnvConformance, CodeSearchPathForTheJobAndForOneTask) {
  if (orb::IsInitialized()) orb::Shutdown();
  orb::OrbConfig config;
  config.code_search_path = {JOB_FUNCTIONS_DIR};  // workers run the default worker, loading it
  orb::Init(config, cmd_argc, cmd_argv);
  EXPECT_EQ(*orb::Task(FromJobLibrary).Remote("a").Get(30000), "job:a");
  // The job's libraries do not have it...
  EXPECT_THROW(orb::Task(FromExtraLibrary).Remote("b").Get(30000), orb::internal::OrbTaskException);
  // ...a task whose environment adds its library does.
  orb::RuntimeEnv env;
  env.Set("code_search_path", std::vector<std::string>{EXTRA_FUNCTIONS_LIB});
  EXPECT_EQ(*orb::Task(FromExtraLibrary).SetRuntimeEnv(env).Remote("b").Get(30000), "extra:b");
  orb::Shutdown();
}
