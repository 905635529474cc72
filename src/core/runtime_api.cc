// The functions behind <orb/api.h>: one CoreWorker per process, created by Init.
#include <stdexcept>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>

#include "common/fork_server_protocol.h"
#include "common/logging.h"
#include "common/process.h"
#include "common/resources.h"
#include "common/runtime_env_spec.h"
#include "common/session.h"
#include "core/fork_server.h"
#include "core/core_worker.h"
#include "core/embedded_cluster.h"
#include "core/library_loader.h"
#include "core/local_mode_runtime.h"
#include "orb/api.h"

namespace orb::internal {
namespace {

std::unique_ptr<EmbeddedCluster> g_cluster;
std::unique_ptr<Runtime> g_runtime;
CoreWorker* g_worker = nullptr;  // g_runtime, when it is a cluster's
// SetPythonWorkers: how this job's Python workers start.
std::string g_python_executable;
std::vector<std::string> g_python_path;
// Local mode's key-value storage (a cluster's is the GCS's).
std::mutex g_local_kv_mu;
std::map<std::string, std::string> g_local_kv;

Runtime& TheRuntime() {
  if (!g_runtime) throw Error("orb is not initialized: call orb::Init() first");
  return *g_runtime;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Applies --orb-* flags (also spelt --orb_*, as Ray's --ray_* flags are) to `config`.
// Other arguments belong to the program and are left alone, null entries too (gtest
// removes its flags from argv and leaves the tail null). Unknown --orb-* flags are an
// error: a typo must not silently start an embedded cluster instead of joining the
// intended one.
void ApplyFlags(Config* config, int argc, char** argv) {
  for (int i = 1; i < argc && argv; ++i) {
    if (!argv[i]) continue;
    std::string arg = argv[i];
    if (arg.rfind("--orb-", 0) != 0 && arg.rfind("--orb_", 0) != 0) continue;
    auto eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    std::replace(name.begin(), name.end(), '_', '-');
    std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (name == "--orb-worker-mode") continue;
    if (name == "--orb-address") {
      config->address = value;
    } else if (name == "--orb-token") {
      config->token = value;
    } else if (name == "--orb-namespace") {
      config->ray_namespace = value;
    } else if (name == "--orb-num-cpus") {
      config->num_cpus = std::atof(value.c_str());
    } else if (name == "--orb-prestart-workers") {
      config->prestart_workers = std::atoi(value.c_str());
    } else if (name == "--orb-default-actor-lifetime") {
      std::string lower = value;
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      if (lower != "detached" && lower != "non_detached") {
        throw Error("--orb-default-actor-lifetime must be detached or non_detached, not '" + value + "'");
      }
      config->default_actor_lifetime = lower == "detached" ? ActorLifetime::DETACHED : ActorLifetime::NON_DETACHED;
    } else if (name == "--orb-runtime-env") {
      config->runtime_env = RuntimeEnv::Deserialize(value);
    } else if (name == "--orb-code-search-path") {
      std::stringstream ss(value);
      std::string dir;
      while (std::getline(ss, dir, ':')) config->code_search_path.push_back(dir);
    } else {
      throw Error("unknown flag " + name +
                  " (known: --orb-address, --orb-token, --orb-namespace, --orb-num-cpus, --orb-prestart-workers, "
                  "--orb-code-search-path, "
                  "--orb-runtime-env, --orb-default-actor-lifetime)");
    }
  }
}

// The job's runtime environment, checked and in canonical form; RuntimeEnvError when
// it is malformed. Paths are taken from the driver's current directory.
std::string JobRuntimeEnv(const Config& config) {
  if (!config.runtime_env || config.runtime_env->Empty()) return "";
  auto spec = ParseRuntimeEnv(config.runtime_env->Serialize());
  if (!spec.ok()) throw RuntimeEnvError("Config::runtime_env: " + std::string(spec.status().message()));
  std::error_code ec;
  MakePathsAbsolute(&*spec, std::filesystem::current_path(ec).string());
  return SerializeRuntimeEnv(*spec);
}

[[noreturn]] void RunWorker() {
  InitLogging("worker", "");
  CoreWorkerOptions options;
  options.is_driver = false;
  options.gcs_address = Env("ORB_GCS_ADDRESS");
  options.raylet_address = Env("ORB_RAYLET_ADDRESS");
  options.token = Env("ORB_TOKEN");
  options.job_id = JobID::FromHex(Env("ORB_JOB_ID"));
  options.worker_id = WorkerID::FromHex(Env("ORB_WORKER_ID"));
  if (!Env("ORB_NODE_IP").empty()) options.node_ip = Env("ORB_NODE_IP");
  options.ray_namespace = Env("ORB_NAMESPACE");
  options.detached_actors_by_default = Env("ORB_DEFAULT_ACTOR_LIFETIME") == "detached";
  options.runtime_env = Env("ORB_RUNTIME_ENV");
  if (auto s = LoadCodeSearchPath(Env("ORB_CODE_SEARCH_PATH")); !s.ok()) {
    std::cerr << "orb worker: " << s.message() << std::endl;
  }
  auto worker = CoreWorker::Connect(options);
  if (!worker.ok()) {
    std::cerr << "orb worker: " << worker.status().message() << std::endl;
    std::_Exit(1);
  }
  g_worker = worker->get();
  g_runtime = std::move(*worker);
  g_worker->RunTaskLoop();
  std::cout.flush();
  std::_Exit(0);  // skip static destructors: gRPC threads may still be running
}

}  // namespace

void Init(const Config& base, int argc, char** argv) {
  // A job's fork server returns from here only in each worker it forks.
  if (!Env(fork_server::kSocketEnv).empty()) RunForkServer(Env(fork_server::kSocketEnv));
  if (Env("ORB_WORKER_MODE") == "1") RunWorker();
  if (g_runtime) {
    // As in Ray: a second Init is a no-op (the first one's cluster and options stay).
    spdlog::warn("orb::Init called again while initialized: ignored");
    return;
  }
  Config config = base;
  ApplyFlags(&config, argc, argv);
  if (config.address.empty()) config.address = Env("ORB_ADDRESS");
  if (config.address == "auto") config.address = FindLocalClusterAddress();
  static std::once_flag logging_once;
  std::call_once(logging_once, [] { InitLogging("driver", ""); });
  spdlog::set_level(spdlog::level::warn);
  if (const char* level = std::getenv("ORB_LOG_LEVEL")) spdlog::set_level(spdlog::level::from_str(level));

  // Everything the job's options need is checked before a cluster is started.
  CoreWorkerOptions options;
  for (const auto& p : config.code_search_path) {
    options.code_search_path.push_back(std::filesystem::absolute(p).string());
  }
  // A C++ program is its own worker; a Python one's C++ functions come from libraries
  // on the code search path, run by the raylet's default worker.
  if (options.code_search_path.empty() && g_python_executable.empty()) {
    options.worker_executable = SelfExecutablePath();
  }
  options.python_executable = g_python_executable;
  options.python_path = g_python_path;
  options.ray_namespace = config.ray_namespace;
  options.detached_actors_by_default = config.default_actor_lifetime == ActorLifetime::DETACHED;
  if (config.prestart_workers < 0) throw Error("Config::prestart_workers must be >= 0, not " + std::to_string(config.prestart_workers));
  options.prestart_workers = config.prestart_workers;
  options.runtime_env = JobRuntimeEnv(config);
  if (config.local_mode) {
    g_runtime = std::make_unique<LocalModeRuntime>(config, options.runtime_env);
    return;
  }
  std::unique_ptr<EmbeddedCluster> started;
  if (config.address.empty()) {
    auto cluster = EmbeddedCluster::Start(config);
    if (!cluster.ok()) throw Error("cannot start the embedded cluster: " + std::string(cluster.status().message()));
    started = std::move(*cluster);
    options.gcs_address = started->gcs_address();
    options.token = started->token();
  } else {
    std::string host;
    int port;
    if (auto s = ParseAddress(config.address, &host, &port); !s.ok()) throw Error(std::string(s.message()));
    options.gcs_address = config.address;
    options.token = config.token.empty() ? FindTokenForAddress(config.address) : config.token;
    options.node_ip = NodeIpFor(config.address);
  }
  auto worker = CoreWorker::Connect(options);
  if (!worker.ok()) {
    auto code = worker.status().code();
    std::string why(worker.status().message());
    if (code == absl::StatusCode::kUnauthenticated) why += " (pass the cluster token: --orb-token or ORB_TOKEN)";
    throw Error("orb::Init failed: " + why);
  }
  g_worker = worker->get();
  g_runtime = std::move(*worker);
  g_cluster = std::move(started);
}

void Shutdown() {
  if (g_runtime) g_runtime->Disconnect();
  if (g_runtime && !g_runtime->SafeToDestroy()) g_runtime.release();  // NOLINT: left to the tasks still running
  g_runtime.reset();
  g_worker = nullptr;
  g_cluster.reset();
}

bool IsInitialized() { return g_runtime != nullptr; }

void SetPythonWorkers(const std::string& executable, const std::vector<std::string>& path) {
  g_python_executable = executable;
  g_python_path = path;
}

void KvPut(const std::string& ns, const std::string& key, const std::string& value) {
  TheRuntime();
  if (g_worker) return g_worker->KvPut(ns, key, value);
  std::lock_guard<std::mutex> lock(g_local_kv_mu);
  g_local_kv[ns + '\0' + key] = value;
}

bool KvGet(const std::string& ns, const std::string& key, std::string* value) {
  TheRuntime();
  if (g_worker) {
    auto found = g_worker->KvGet(ns, key);
    if (found) *value = std::move(*found);
    return found.has_value();
  }
  std::lock_guard<std::mutex> lock(g_local_kv_mu);
  auto it = g_local_kv.find(ns + '\0' + key);
  if (it == g_local_kv.end()) return false;
  *value = it->second;
  return true;
}

bool IsLocalMode() { return g_runtime && !g_worker; }

namespace {

void CheckOneReturn(const TaskOptionsData& options) {
  if (options.num_returns != 1) {
    throw std::invalid_argument("a task with num_returns=" + std::to_string(options.num_returns) +
                                " is submitted with SubmitTaskReturns / SubmitActorTaskReturns");
  }
}

}  // namespace

RefData SubmitTask(const std::string& function_name, std::vector<ArgData> args, const TaskOptionsData& options) {
  CheckOneReturn(options);
  return TheRuntime().SubmitTask(function_name, std::move(args), options).front();
}

std::vector<RefData> SubmitTaskReturns(const std::string& function_name, std::vector<ArgData> args,
                                       const TaskOptionsData& options) {
  return TheRuntime().SubmitTask(function_name, std::move(args), options);
}

RefData PutWith(size_t size, const std::function<void(char*)>& write) { return TheRuntime().PutWith(size, write); }

std::vector<std::shared_ptr<ValueBuffer>> Get(const std::vector<RefData>& refs, int64_t timeout_ms) {
  return TheRuntime().Get(refs, timeout_ms);
}

std::vector<bool> Wait(const std::vector<RefData>& refs, int num_objects, int64_t timeout_ms) {
  return TheRuntime().Wait(refs, num_objects, timeout_ms);
}

void WhenReady(const RefData& ref, std::function<void()> callback) { TheRuntime().WhenReady(ref, std::move(callback)); }

std::string CreateActor(const std::string& factory_name, std::vector<ArgData> args, const ActorOptionsData& options) {
  return TheRuntime().CreateActor(factory_name, std::move(args), options);
}

RefData SubmitActorTask(const std::string& actor_id, const std::string& method_name, std::vector<ArgData> args,
                        const TaskOptionsData& options) {
  CheckOneReturn(options);
  return TheRuntime().SubmitActorTask(actor_id, method_name, std::move(args), options).front();
}

std::vector<RefData> SubmitActorTaskReturns(const std::string& actor_id, const std::string& method_name,
                                            std::vector<ArgData> args, const TaskOptionsData& options) {
  return TheRuntime().SubmitActorTask(actor_id, method_name, std::move(args), options);
}

void KillActor(const std::string& actor_id, bool no_restart, const std::string& reason) {
  TheRuntime().KillActor(actor_id, no_restart, reason);
}

RefData TrackActorHandles(const std::string& actor_id) { return TheRuntime().TrackActorHandles(actor_id); }

GeneratorNext NextGeneratorItem(const RefData& task_ref, int64_t timeout_ms, RefData* item) {
  return TheRuntime().NextGeneratorItem(task_ref, timeout_ms, item);
}

void DropGenerator(const RefData& task_ref) {
  if (g_runtime) TheRuntime().DropGenerator(task_ref);
}

std::vector<RefData> PeekGeneratorItems(const RefData& task_ref, int64_t n) {
  return TheRuntime().PeekGeneratorItems(task_ref, n);
}

bool ReportGeneratorItem(ReturnData item) { return TheRuntime().ReportGeneratorItem(std::move(item)); }

void CancelTask(const RefData& ref, bool force, bool recursive) {
  TheRuntime().CancelTask(ref, force, recursive);
}

std::string GetNamedActor(const std::string& name, const std::string& ray_namespace) {
  return TheRuntime().GetNamedActor(name, ray_namespace);
}

std::string CurrentActorId() { return g_runtime ? g_runtime->CurrentActorId() : std::string(); }
std::string CurrentPlacementGroupId() { return g_runtime ? g_runtime->CurrentPlacementGroupId() : std::string(); }
void BeginBlockedWait() {
  if (g_runtime) g_runtime->LendCpu(true);
}
void EndBlockedWait() {
  if (g_runtime) g_runtime->LendCpu(false);
}
std::map<std::string, double> CurrentTaskResources() {
  return g_runtime ? g_runtime->CurrentTaskResources() : std::map<std::string, double>();
}
ClusterEndpoints GetClusterEndpoints() { return TheRuntime().GetClusterEndpoints(); }
bool WasCurrentActorRestarted() { return g_runtime && g_runtime->WasCurrentActorRestarted(); }

std::string CreatePlacementGroup(const PlacementGroupCreationOptions& options) {
  return TheRuntime().CreatePlacementGroup(options);
}

bool WaitPlacementGroupReady(const std::string& id_hex, int64_t timeout_ms) {
  return TheRuntime().WaitPlacementGroupReady(id_hex, timeout_ms);
}

void RemovePlacementGroup(const std::string& id_hex) { TheRuntime().RemovePlacementGroup(id_hex); }

bool LookUpPlacementGroup(const std::string& id_hex, const std::string& name, PlacementGroupData* out) {
  return TheRuntime().LookUpPlacementGroup(id_hex, name, out);
}

std::vector<PlacementGroupData> ListPlacementGroups() { return TheRuntime().ListPlacementGroups(); }

CoreWorker& CurrentCoreWorker() {
  TheRuntime();
  if (!g_worker) throw Error("collectives need a cluster: local_mode runs everything in one process");
  return *g_worker;
}

std::string HexOf(const std::string& binary) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  hex.reserve(binary.size() * 2);
  for (unsigned char c : binary) {
    hex.push_back(digits[c >> 4]);
    hex.push_back(digits[c & 15]);
  }
  return hex;
}

void AddLocalReference(const std::string& id) {
  if (g_runtime) g_runtime->AddLocalReference(id);
}

void RemoveLocalReference(const std::string& id) {
  if (g_runtime) g_runtime->RemoveLocalReference(id);
}

namespace {
// ObjectRefs serialized on this thread since the last Take or Clear, each held once.
thread_local std::vector<RefData> serialized_refs;
// Open BorrowScopes on this thread.
thread_local int borrow_scopes = 0;
}  // namespace

void OnRefSerialized(const RefData& ref) {
  AddLocalReference(ref.id);
  serialized_refs.push_back(ref);
}

std::vector<RefData> TakeSerializedRefs() {
  std::vector<RefData> taken;
  taken.swap(serialized_refs);
  return taken;
}

void ClearSerializedRefs() {
  for (const auto& ref : TakeSerializedRefs()) RemoveLocalReference(ref.id);
}

void OnRefDeserialized(const RefData& ref) {
  if (!g_runtime) return;
  g_runtime->Borrow(ref);
  if (borrow_scopes == 0) g_runtime->RegisterBorrows();
}

BorrowScope::BorrowScope() { ++borrow_scopes; }

BorrowScope::~BorrowScope() {
  if (--borrow_scopes > 0 || !g_runtime) return;
  try {
    g_runtime->RegisterBorrows();
  } catch (const std::exception& e) {
    spdlog::warn("cannot register borrowed object references: {}", e.what());
  }
}

std::string CurrentNamespace() { return TheRuntime().NamespaceName(); }
std::string CurrentGcsAddress() { return TheRuntime().GcsAddress(); }
std::string CurrentNodeId() { return TheRuntime().NodeIdHex(); }
std::string CurrentJobId() { return TheRuntime().JobIdHex(); }
std::string CurrentWorkerId() { return TheRuntime().WorkerIdHex(); }
std::string CurrentTaskId() { return TheRuntime().TaskIdHex(); }
std::vector<NodeInfo> ClusterNodes() { return TheRuntime().Nodes(); }

void RequestResources(const std::vector<std::map<std::string, double>>& bundles) {
  for (const auto& bundle : bundles) {
    if (auto s = ResourceSet::Validate(bundle); !s.ok()) throw Error("RequestResources: " + std::string(s.message()));
  }
  TheRuntime().RequestResources(bundles);
}

}  // namespace orb::internal
