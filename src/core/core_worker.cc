#include "core/core_worker.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <set>
#include <future>
#include <thread>

#include "common/call_stream_protocol.h"
#include "common/call_stream_routes.h"
#include "core/task_options_check.h"
#include "core/generator_streams.h"
#include "core/task_returns.h"
#include "common/metric_samples.h"
#include "common/metrics.h"
#include "common/resources.h"
#include "common/runtime_env_spec.h"
#include "common/session.h"
#include "core/errors_from_proto.h"
#include "core/user_metrics.h"

namespace orb {
namespace {

thread_local std::string current_task_id;  // binary; empty outside a task
// The placement group (binary) the current task runs in (empty: none), whether what it
// starts goes there too, and the resources it holds.
thread_local std::string current_placement_group;
thread_local bool current_task_captures = false;
thread_local std::map<std::string, double> current_resources;

class CoreWorkerGrpcService : public RpcService {
 public:
  CoreWorkerGrpcService(CoreWorker* handler, ServiceContext context)
      : RpcService(rpc::CoreWorkerService::service_full_name(), std::move(context)), handler_(handler) {}
  ORB_SERVICE_METHOD(PushTasks)
  ORB_SERVICE_METHOD(GetObjectStatus)
  ORB_SERVICE_METHOD(UpdateBorrowers)
  ORB_SERVICE_METHOD(ReportTaskResults)
  ORB_SERVICE_METHOD(ReportGeneratorItem)
  ORB_SERVICE_METHOD(Exit)
  ORB_SERVICE_METHOD(CancelTask)
  ORB_SERVICE_METHOD(RemoteCancelTask)
  ORB_SERVICE_METHOD(ListOwnedObjects)
  ORB_SERVICE_METHOD(GetWorkerMetrics)
  ORB_SERVICE_METHOD(ObjectMoved)

 private:
  CoreWorker* handler_;
};

// A store write's failure as the API's error.
void ThrowIfStoreFailed(const ObjectID& id, const absl::Status& s) {
  if (s.ok()) return;
  if (s.code() == absl::StatusCode::kResourceExhausted) throw ObjectStoreFullError(std::string(s.message()));
  if (s.code() == absl::StatusCode::kFailedPrecondition) throw OutOfDiskError(std::string(s.message()));
  throw Error("cannot store object " + id.Hex() + ": " + std::string(s.message()));
}

// The memory for task specs kept to rebuild lost objects: $ORB_MAX_LINEAGE_BYTES (as
// Ray's max_lineage_bytes), 1 GiB by default.
size_t MaxLineageBytes() {
  const char* env = std::getenv("ORB_MAX_LINEAGE_BYTES");
  if (!env || !*env) return size_t{1} << 30;
  char* end = nullptr;
  unsigned long long v = std::strtoull(env, &end, 10);
  if (*end != '\0') {
    spdlog::warn("ORB_MAX_LINEAGE_BYTES={} is not a number of bytes; using 1 GiB", env);
    return size_t{1} << 30;
  }
  return static_cast<size_t>(v);
}

}  // namespace

CoreWorker::CoreWorker(CoreWorkerOptions options)
    : options_(std::move(options)), driver_task_id_(TaskID::FromRandom()) {}

CoreWorker::~CoreWorker() { Disconnect(); }

absl::StatusOr<std::unique_ptr<CoreWorker>> CoreWorker::Connect(CoreWorkerOptions options) {
  std::unique_ptr<CoreWorker> worker(new CoreWorker(std::move(options)));
  if (auto s = worker->Start(); !s.ok()) return s;
  return worker;
}

absl::Status CoreWorker::FindLocalRaylet() {
  auto nodes = gcs_->CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest());
  if (!nodes.ok()) return absl::UnavailableError("cannot reach the GCS at " + options_.gcs_address + ": " +
                                                 std::string(nodes.status().message()));
  const rpc::NodeInfo* best = nullptr;
  for (const auto& node : nodes->nodes()) {
    if (node.state() != rpc::NodeInfo::ALIVE || node.ip() != options_.node_ip) continue;
    if (!best || node.start_time_ms() < best->start_time_ms()) best = &node;
  }
  if (!best) return absl::UnavailableError("no live raylet on " + options_.node_ip + " in the cluster at " +
                                           options_.gcs_address);
  options_.raylet_address = best->ip() + ":" + std::to_string(best->raylet_port());
  return absl::OkStatus();
}

absl::Status CoreWorker::Start() {
  gcs_ = std::make_unique<RpcClient<rpc::GcsService>>(options_.gcs_address, options_.token);
  task_events_ = std::make_unique<TaskEventBuffer>(gcs_.get(), &loop_, TaskEventBuffer::OptionsFromEnv());
  CallOptions retrying;
  retrying.max_attempts = 5;
  if (options_.is_driver) {
    // As in Ray, a job that names no namespace gets one of its own: its named actors
    // and groups are invisible to other jobs.
    if (options_.ray_namespace.empty()) options_.ray_namespace = RandomUuid();
    rpc::AddJobRequest add;
    add.mutable_job()->set_driver_ip(options_.node_ip);
    add.mutable_job()->set_driver_pid(getpid());
    add.mutable_job()->set_worker_executable(options_.worker_executable);
    for (const auto& p : options_.code_search_path) add.mutable_job()->add_code_search_path(p);
    add.mutable_job()->set_python_executable(options_.python_executable);
    for (const auto& p : options_.python_path) add.mutable_job()->add_python_path(p);
    add.mutable_job()->set_namespace_(options_.ray_namespace);
    add.mutable_job()->set_detached_actors_by_default(options_.detached_actors_by_default);
    add.mutable_job()->set_prestart_workers(options_.prestart_workers);
    add.mutable_job()->set_language(options_.python_executable.empty() ? rpc::CPP : rpc::PYTHON);
    options_.worker_id = WorkerID::FromRandom();
    add.mutable_job()->set_driver_worker_id(options_.worker_id.Binary());
    auto job = gcs_->CallSync<rpc::AddJobReply>(ORB_RPC(AddJob), add, retrying);
    if (!job.ok()) {
      return absl::Status(job.status().code(),
                          "cannot join the cluster at " + options_.gcs_address + ": " + std::string(job.status().message()));
    }
    options_.job_id = JobID::FromBinary(job->job_id());
  }
  if (options_.raylet_address.empty()) {
    if (auto s = FindLocalRaylet(); !s.ok()) return s;
  }
  raylet_ = std::make_unique<RpcClient<rpc::RayletService>>(options_.raylet_address, options_.token);
  worker_clients_ = std::make_unique<WorkerClientPool>(options_.token);
  call_stream_clients_ = std::make_unique<CallStreamClientPool>(options_.token);
  raylet_clients_ = std::make_unique<RayletClientPool>(options_.token);
  objects_ = std::make_unique<ObjectTable>(
      [this](const ObjectID& id, const std::string& node) {
        if (store_) store_->Delete(id, NodeID::FromBinary(node));
      },
      [this](const std::string& owner, const ObjectID& id, int holds) {
        UpdateBorrowersAt(owner, OwnerString(), {id}, -holds, /*wait=*/false);
      },
      MaxLineageBytes());
  streams_ = std::make_unique<GeneratorStreams>(objects_.get());

  // Serve before registering, so the raylet can hand out our address at once.
  TaskReceiver::Hooks hooks;
  hooks.resolve_arg = [this](const rpc::ObjectRefProto& ref, const rpc::ObjectValue* known) {
    auto forever = std::chrono::steady_clock::time_point::max();
    if (known) return Materialize(ObjectID::FromBinary(ref.object_id()), std::make_shared<rpc::ObjectValue>(*known), forever);
    internal::RefData data{ref.object_id(), ref.owner().ip() + ":" + std::to_string(ref.owner().port())};
    return GetOne(data, forever);
  };
  hooks.store_result = [this](const rpc::TaskSpec& spec, const std::string& object_id, std::string bytes,
                               const std::vector<internal::RefData>& refs) {
    return StoreReturn(spec, ObjectID::FromBinary(object_id), std::move(bytes), refs);
  };
  hooks.set_current_task = [](const std::string& id, const rpc::TaskSpec* placement) {
    current_task_id = id;
    current_placement_group = placement ? placement->scheduling().placement_group_id() : std::string();
    current_task_captures = placement && placement->scheduling().capture_child_tasks();
    current_resources.clear();
    if (!placement) return;
    for (const auto& [name, amount] : placement->resources()) {
      size_t group = name.find("_group_");  // in a placement group: CPU_group_<i>_<id>
      std::string plain = group == std::string::npos ? name : name.substr(0, group);
      if (group != std::string::npos && plain == "bundle") continue;  // the group's own marker
      current_resources[plain] = std::max(current_resources[plain], amount);
    }
  };
  hooks.on_task_ran = [this](const rpc::TaskSpec& spec, int64_t start_ns, int64_t end_ns, const rpc::ErrorInfo* error) {
    task_events_->RecordRun(spec, start_ns, end_ns, error);
    if (canceller_) canceller_->OnTaskEnded(spec.task_id());
  };
  hooks.on_actor_created = [this](const std::string& actor_id, bool restarted) {
    std::lock_guard<std::mutex> lock(actor_mu_);
    hosted_actor_id_ = actor_id;
    hosted_actor_restarted_ = restarted;
  };
  hooks.on_actor_exit = [this](const std::string& actor_id, const std::string& why) {
    KillActor(actor_id, /*no_restart=*/true, why);
  };
  hooks.report_results = [this](const rpc::Address& caller, std::vector<rpc::TaskResult> results,
                                 std::function<void(bool)> done) {
    rpc::ReportTaskResultsRequest request;
    for (auto& r : results) *request.add_results() = std::move(r);
    CallOptions call;
    call.timeout = std::chrono::milliseconds(10000);
    worker_clients_->Get(caller.ip() + ":" + std::to_string(caller.port()))
        ->Call<rpc::ReportTaskResultsReply>(
            ORB_RPC(ReportTaskResults), request,
            [done](const absl::Status& status, rpc::ReportTaskResultsReply&&) { done(status.ok()); }, call);
  };
  hooks.run_after = [this](std::chrono::milliseconds delay, std::function<void()> fn) {
    loop_.RunAfter(delay, std::move(fn));
  };
  hooks.on_retire = [this] {
    // max_calls: the worker ends once nothing it owns is still needed — a value another
    // process borrows or a task takes, or one not made yet (Ray's workers wait so too).
    loop_.RunEvery(std::chrono::milliseconds(100), [this] {
      for (const ObjectTable::OwnedSummary& owned : objects_->ListOwned()) {
        if (owned.released) continue;
        if (!owned.value || owned.borrowers > 0 || owned.task_refs > 0 || owned.captured > 0) return true;
      }
      spdlog::info("a function reached its max_calls here and nothing this worker owns is needed: exiting");
      receiver_->Stop();
      return false;
    });
  };
  receiver_ = std::make_unique<TaskReceiver>(hooks);
  service_ = std::make_unique<CoreWorkerGrpcService>(this, ServiceContext{nullptr, options_.token});
  std::error_code ec;
  std::filesystem::create_directories(TempRoot() + "/sockets", ec);
  unix_socket_ = ec ? "" : TempRoot() + "/sockets/" + options_.worker_id.Hex().substr(0, 20);
  auto server = StartServer(options_.node_ip, 0, {service_.get()}, unix_socket_);
  if (!server.ok()) return server.status();
  server_ = std::move(*server);
  if (auto started = StartCallStream(); !started.ok()) return started;
  self_address_.set_ip(options_.node_ip);
  self_address_.set_port(server->port);
  self_address_.set_worker_id(options_.worker_id.Binary());

  rpc::RegisterWorkerRequest reg;
  reg.set_worker_id(options_.worker_id.Binary());
  reg.set_job_id(options_.job_id.Binary());
  reg.set_pid(getpid());
  reg.set_port(server->port);
  reg.set_is_driver(options_.is_driver);
  reg.set_unix_socket(unix_socket_);
  if (call_stream_) {
    reg.set_call_socket(call_stream_->unix_path());
    reg.set_call_port(call_stream_->port());
  }
  auto registered = raylet_->CallSync<rpc::RegisterWorkerReply>(ORB_RPC(RegisterWorker), reg, retrying);
  if (!registered.ok()) {
    return absl::UnavailableError("cannot register with the raylet at " + options_.raylet_address + ": " +
                                  std::string(registered.status().message()));
  }
  node_id_ = NodeID::FromBinary(registered->node_id());
  self_address_.set_node_id(node_id_.Binary());
  task_events_->SetExecutor(node_id_.Binary(), options_.worker_id.Binary(), getpid());
  auto arena = ShmArena::Attach(registered->object_store_path(), static_cast<size_t>(registered->object_store_bytes()),
                                options_.is_driver ? ShmArena::Mapping::kPopulated : ShmArena::Mapping::kOnDemand);
  if (!arena.ok()) return arena.status();
  store_ = std::make_unique<StoreClient>(raylet_.get(), options_.worker_id, std::move(*arena));

  TaskSubmitterOptions submit;
  submit.job_id = options_.job_id;
  submit.worker_id = options_.worker_id;
  submit.self_address = self_address_;
  submit.events = task_events_.get();
  pusher_ = std::make_unique<TaskPusher>(worker_clients_.get(), call_stream_clients_.get(), node_id_.Binary());
  // A Get right after a push reads the reply itself rather than wait to be woken for it.
  objects_->SetWaitAssist([this](const std::function<bool()>& done, std::chrono::steady_clock::time_point until) {
    return pusher_->AssistLastPush(done, until);
  });
  submitter_ = std::make_unique<TaskSubmitter>(&loop_, objects_.get(), raylet_.get(), raylet_clients_.get(),
                                               pusher_.get(), submit);
  actor_submitter_ = std::make_unique<ActorSubmitter>(
      objects_.get(), gcs_.get(), pusher_.get(), [this](std::function<void()> fn) { loop_.Post(std::move(fn)); },
      task_events_.get());
  TaskCanceller::Parts cancel;
  cancel.objects = objects_.get();
  cancel.tasks = submitter_.get();
  cancel.actor_calls = actor_submitter_.get();
  cancel.workers = worker_clients_.get();
  cancel.receiver = options_.is_driver ? nullptr : receiver_.get();
  // force: the worker ends as a crash would, and its owner sees the task cancelled.
  cancel.exit_process = [] { std::_Exit(1); };
  canceller_ = std::make_unique<TaskCanceller>(std::move(cancel));
  loop_.Start();
  if (options_.is_driver && LogSubscriber::EnabledByEnv()) {
    log_subscriber_ = std::make_unique<LogSubscriber>(gcs_.get(), &loop_, options_.job_id, &std::cerr);
    log_subscriber_->Start();
  }
  return absl::OkStatus();
}

void CoreWorker::Disconnect() {
  if (disconnected_.exchange(true)) return;
  // What ran here reaches the state API even when the process ends right after.
  if (task_events_) task_events_->Flush(/*wait=*/true);
  if (log_subscriber_) log_subscriber_->Stop();
  if (submitter_) submitter_->Shutdown();
  if (actor_submitter_) actor_submitter_->Shutdown();
  CallOptions quick;
  quick.timeout = std::chrono::milliseconds(1000);
  if (raylet_) {
    rpc::DisconnectWorkerRequest request;
    request.set_worker_id(options_.worker_id.Binary());
    (void)raylet_->CallSync<rpc::DisconnectWorkerReply>(ORB_RPC(DisconnectWorker), request, quick);
  }
  if (options_.is_driver && gcs_ && !options_.job_id.IsNil()) {
    rpc::MarkJobFinishedRequest request;
    request.set_job_id(options_.job_id.Binary());
    (void)gcs_->CallSync<rpc::MarkJobFinishedReply>(ORB_RPC(MarkJobFinished), request, quick);
  }
  if (receiver_) receiver_->Stop();
  loop_.Stop();  // what calls in flight post from here on is dropped, never run
  // Calls still in flight (lease requests queued at raylets, long polls to owners) are
  // cancelled, and their callbacks run now, while everything they touch still exists.
  auto drain = std::chrono::milliseconds(2000);
  if (worker_clients_) worker_clients_->Drain(drain);
  if (call_stream_clients_) call_stream_clients_->Drain(drain);
  if (raylet_clients_) raylet_clients_->Drain(drain);
  if (raylet_) raylet_->Drain(drain);
  if (gcs_) gcs_->Drain(drain);
  if (server_.server) server_.server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
  if (!unix_socket_.empty()) ::unlink(unix_socket_.c_str());
}

void CoreWorker::HandleGetWorkerMetrics(const rpc::GetWorkerMetricsRequest&, rpc::GetWorkerMetricsReply* reply,
                                        SendReply send) {
  prom::Exposition families;
  metrics::AppendUserMetrics(&families);
  AppendProcessMetrics(&families);
  ToSamples(families, reply->mutable_samples());
  send(grpc::Status::OK);
}

std::string CoreWorker::OwnerString() const {
  return self_address_.ip() + ":" + std::to_string(self_address_.port());
}

rpc::ObjectValue CoreWorker::StoreReturn(const rpc::TaskSpec& spec, const ObjectID& id, std::string bytes,
                                         const std::vector<internal::RefData>& refs) {
  rpc::ObjectValue value;
  try {
    value = StoreValue(id, std::move(bytes), spec.caller());
  } catch (...) {
    for (const auto& ref : refs) objects_->RemoveLocalRef(ObjectID::FromBinary(ref.id));
    throw;
  }
  HandOverRefs(refs, spec.caller(), &value);
  return value;
}

std::vector<internal::RefData> CoreWorker::RefsTo(const std::vector<ObjectID>& ids) const {
  std::vector<internal::RefData> refs;
  refs.reserve(ids.size());
  for (const ObjectID& id : ids) refs.push_back(internal::RefData{id.Binary(), OwnerString()});
  return refs;
}

std::string CoreWorker::CurrentTaskId() const { return current_task_id; }

std::map<std::string, double> CoreWorker::CurrentTaskResources() const { return current_resources; }

CoreWorker::ClusterEndpoints CoreWorker::GetClusterEndpoints() {
  CallOptions quick;
  quick.timeout = std::chrono::seconds(5);
  auto info = gcs_->CallSync<rpc::GetMetricsReply>(ORB_RPC(GetMetrics), rpc::GetMetricsRequest(), quick);
  if (!info.ok()) throw Error("cannot ask the GCS at " + options_.gcs_address + " for its endpoints: " +
                              std::string(info.status().message()));
  std::string host = options_.gcs_address.substr(0, options_.gcs_address.rfind(':'));
  auto at = [&](int port) { return port > 0 ? host + ":" + std::to_string(port) : std::string(); };
  return ClusterEndpoints{at(info->dashboard_port()), at(info->metrics_export_port())};
}

std::string CoreWorker::CurrentPlacementGroupId() const {
  return current_placement_group.empty() ? std::string() : PlacementGroupID::FromBinary(current_placement_group).Hex();
}

std::string CoreWorker::TaskIdHex() const {
  return current_task_id.empty() ? std::string() : TaskID::FromBinary(current_task_id).Hex();
}

ObjectID CoreWorker::NextPutId() {
  TaskID task = current_task_id.empty() ? driver_task_id_ : TaskID::FromBinary(current_task_id);
  return ObjectID::ForPut(task, ++put_index_);
}

rpc::ObjectValue CoreWorker::StoreValue(const ObjectID& id, std::string bytes, const rpc::Address& owner) {
  rpc::ObjectValue value;
  value.set_size(static_cast<int64_t>(bytes.size()));
  if (bytes.size() <= options_.max_inline_bytes) {
    value.set_inline_value(std::move(bytes));
    return value;
  }
  ThrowIfStoreFailed(id, store_->Put(id, bytes, owner));
  value.set_in_store_node_id(node_id_.Binary());
  return value;
}

internal::RefData CoreWorker::PutWith(size_t size, const std::function<void(char*)>& write) {
  if (size <= options_.max_inline_bytes) {
    internal::ClearSerializedRefs();
    std::string bytes(size, '\0');
    write(bytes.data());
    std::vector<ObjectID> contained;  // ObjectRefs in the value: held while it lives
    for (const auto& ref : internal::TakeSerializedRefs()) contained.push_back(ObjectID::FromBinary(ref.id));
    ObjectID id = NextPutId();
    objects_->AddReady(id, StoreValue(id, std::move(bytes), self_address_), contained);
    return internal::RefData{id.Binary(), OwnerString()};
  }
  ObjectID id = NextPutId();
  internal::ClearSerializedRefs();
  absl::Status s = store_->PutWith(id, size, self_address_, write);
  std::vector<ObjectID> contained;  // ObjectRefs in the value: held while it lives
  for (const auto& ref : internal::TakeSerializedRefs()) contained.push_back(ObjectID::FromBinary(ref.id));
  if (!s.ok()) {
    for (const auto& c : contained) objects_->RemoveLocalRef(c);
    ThrowIfStoreFailed(id, s);
  }
  rpc::ObjectValue value;
  value.set_size(static_cast<int64_t>(size));
  value.set_in_store_node_id(node_id_.Binary());
  objects_->AddReady(id, std::move(value), contained);
  return internal::RefData{id.Binary(), OwnerString()};
}

rpc::TaskSpec CoreWorker::BuildSpec(const std::string& function_name, std::vector<internal::ArgData> args,
                                    const internal::TaskOptionsData& options, bool default_cpu) {
  CheckTaskOptions(options);
  NodeID affinity;
  if (options.strategy == internal::kStrategyNodeAffinity) affinity = NodeID::FromHex(options.affinity_node_id);
  rpc::TaskSpec spec;
  TaskID task = TaskID::FromRandom();
  ObjectID return_id = ObjectID::ForTaskReturn(task, 1);
  if (options.num_returns > 1) spec.set_num_returns(options.num_returns);
  if (options.streaming) {
    if (options.num_returns != 1) throw Error("a streaming generator task has no num_returns of its own");
    if (options.generator_backpressure < 0) throw Error("generator backpressure must be >= 0 items (0: no bound)");
    spec.set_streaming(true);
    spec.set_generator_backpressure(options.generator_backpressure);
  }
  spec.set_task_id(task.Binary());
  spec.set_job_id(options_.job_id.Binary());
  spec.set_function_name(function_name);
  spec.set_return_id(return_id.Binary());
  spec.set_max_retries(options.max_retries);
  if (options.max_calls < 0) throw Error("max_calls must be >= 0 (0: no limit), not " + std::to_string(options.max_calls));
  spec.set_max_calls(options.max_calls);
  spec.set_retry_exceptions(options.retry_exceptions);
  spec.set_retry_exception_allowlist(options.retry_exception_allowlist);
  spec.set_memory_growth(options.memory_growth);
  spec.set_max_memory(options.max_memory);
  spec.set_name(options.name);
  spec.set_runtime_env(EffectiveRuntimeEnv(options.runtime_env));
  spec.set_language(static_cast<rpc::Language>(options.language));
  *spec.mutable_caller() = self_address_;
  auto* scheduling = spec.mutable_scheduling();
  static_assert(internal::kStrategyDefault == rpc::SchedulingOptions::DEFAULT &&
                internal::kStrategySpread == rpc::SchedulingOptions::SPREAD &&
                internal::kStrategyNodeAffinity == rpc::SchedulingOptions::NODE_AFFINITY);
  scheduling->set_strategy(static_cast<rpc::SchedulingOptions::Strategy>(options.strategy));
  if (!affinity.IsNil()) scheduling->set_affinity_node_id(affinity.Binary());
  scheduling->set_affinity_soft(options.affinity_soft);
  scheduling->set_label_selector(options.label_selector);
  scheduling->set_soft_label_selector(options.soft_label_selector);
  scheduling->set_capture_child_tasks(options.capture_child_tasks && !options.placement_group_id.empty());
  if (options.resources_set) {
    for (const auto& [k, v] : options.resources) {
      if (v > 0) (*spec.mutable_resources())[k] = v;
    }
  } else if (default_cpu) {
    (*spec.mutable_resources())["CPU"] = 1;
  }
  if (!options.placement_group_id.empty()) {
    // In a group: ask for the bundle's renamed resources and a sliver of its marker.
    PlacementGroupID pg = PlacementGroupID::FromHex(options.placement_group_id);
    google::protobuf::Map<std::string, double> renamed;
    for (const auto& [k, v] : spec.resources()) renamed[PlacementGroupResourceName(k, pg.Hex(), options.bundle_index)] = v;
    renamed[PlacementGroupResourceName("bundle", pg.Hex(), options.bundle_index)] = kBundleMarkerRequest;
    *spec.mutable_resources() = std::move(renamed);
    scheduling->set_placement_group_id(pg.Binary());
    scheduling->set_bundle_index(options.bundle_index);
  }
  for (auto& arg : args) {
    for (const auto& ref : arg.contained_refs) {
      std::string host;
      int port = 0;
      ParseAddress(ref.owner, &host, &port).IgnoreError();
      auto* inlined = spec.add_inlined_refs();
      inlined->set_object_id(ref.id);
      inlined->mutable_owner()->set_ip(host);
      inlined->mutable_owner()->set_port(port);
    }
    auto* out = spec.add_args();
    if (!arg.is_ref) {
      out->set_value(std::move(arg.value));
      continue;
    }
    std::string host;
    int port = 0;
    ParseAddress(arg.ref.owner, &host, &port).IgnoreError();
    out->mutable_ref()->set_object_id(arg.ref.id);
    out->mutable_ref()->mutable_owner()->set_ip(host);
    out->mutable_ref()->mutable_owner()->set_port(port);
  }
  return spec;
}

void CoreWorker::RouteGcsCalls() {
  using State = RpcClient<rpc::GcsService>::RouteState;
  State state = gcs_->route_state();
  if (state == State::kWorking || state == State::kNeverWorked) return;
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(gcs_route_mu_);
    if (now < next_gcs_route_lookup_) return;
    next_gcs_route_lookup_ = now + std::chrono::seconds(5);
  }
  if (!ControlCallStreamEnabled() || CallStreamBeside(options_.gcs_address, 1).empty()) {
    std::lock_guard<std::mutex> lock(gcs_route_mu_);
    next_gcs_route_lookup_ = std::chrono::steady_clock::time_point::max();
    return;
  }
  CallOptions quick;
  quick.timeout = std::chrono::seconds(2);
  auto info = gcs_->CallSync<rpc::GetMetricsReply>(ORB_RPC(GetMetrics), rpc::GetMetricsRequest(), quick);
  if (!info.ok()) return;
  std::string endpoint = CallStreamBeside(options_.gcs_address, info->call_stream_port());
  if (endpoint.empty()) return;
  gcs_->RouteOverCallStream(endpoint, {"CreatePlacementGroup", "RemovePlacementGroup", "GetPlacementGroup",
                                       "ListPlacementGroups", "RegisterActor", "GetActorInfo", "GetNamedActor",
                                       "KillActor", "ListActors", "KvPut", "KvGet", "KvDelete", "KvKeys"});
}

std::string CoreWorker::EffectiveRuntimeEnv(const std::string& requested) const {
  if (requested.empty()) return options_.runtime_env;
  auto child = ParseRuntimeEnv(requested);
  if (!child.ok()) throw RuntimeEnvError(std::string(child.status().message()));
  std::error_code ec;
  MakePathsAbsolute(&*child, std::filesystem::current_path(ec).string());
  auto parent = ParseRuntimeEnv(options_.runtime_env);  // checked when this process started
  return SerializeRuntimeEnv(MergeRuntimeEnv(parent.ok() ? *parent : RuntimeEnvSpec(), *child));
}

internal::TaskOptionsData CoreWorker::CapturedPlacement(const internal::TaskOptionsData& options) {
  bool own_placement = !options.placement_group_id.empty() || options.strategy != 0 || options.leave_captured_group;
  if (!current_task_captures || current_placement_group.empty() || own_placement) return options;
  internal::TaskOptionsData captured = options;
  captured.placement_group_id = PlacementGroupID::FromBinary(current_placement_group).Hex();
  captured.bundle_index = -1;
  captured.capture_child_tasks = true;
  return captured;
}

std::vector<internal::RefData> CoreWorker::SubmitTask(const std::string& function_name,
                                                      std::vector<internal::ArgData> args,
                                                      const internal::TaskOptionsData& options) {
  CheckTaskOnlyOptions(function_name, options);
  rpc::TaskSpec spec = BuildSpec(function_name, std::move(args), CapturedPlacement(options), /*default_cpu=*/true);
  std::vector<ObjectID> returns = ReturnIds(spec);
  // One spec, shared by the queue and (when the task may run again) the lineage.
  auto shared = std::make_shared<const rpc::TaskSpec>(std::move(spec));
  std::shared_ptr<const rpc::TaskSpec> lineage;
  std::string not_reconstructable;
  if (shared->max_retries() == 0) {
    not_reconstructable = "task '" + shared->function_name() + "' has max_retries=0, so it does not run again";
  } else if (shared->inlined_refs_size() > 0) {
    not_reconstructable = "task '" + shared->function_name() +
                          "' took ObjectRefs inside argument values, and such lineage is not kept";
  } else {
    lineage = shared;
  }
  for (const ObjectID& id : returns) objects_->AddPending(id, lineage, not_reconstructable);
  if (shared->streaming()) streams_->Add(*shared);
  canceller_->OnSubmitted(current_task_id, returns[0]);
  submitter_->Submit(std::move(shared));
  return RefsTo(returns);
}

void CoreWorker::SetBlocked(bool blocked) {
  if (options_.is_driver) return;
  // Nested on one thread (a Get that waits for a rebuild inside a blocked Get): only
  // the outermost tells the raylet.
  static thread_local int depth = 0;
  if (blocked ? depth++ > 0 : --depth > 0) return;
  rpc::NotifyBlockedRequest request;
  request.set_worker_id(options_.worker_id.Binary());
  request.set_blocked(blocked);
  // Synchronous, so a retried notice cannot overtake a later one.
  (void)raylet_->CallSync<rpc::NotifyBlockedReply>(ORB_RPC(NotifyBlocked), request, CallOptions::Retried());
}

void CoreWorker::AddLocalReference(const std::string& id) { objects_->AddLocalRef(ObjectID::FromBinary(id)); }

void CoreWorker::Borrow(const internal::RefData& ref) { objects_->Borrow(ObjectID::FromBinary(ref.id), ref.owner); }

void CoreWorker::RegisterBorrows() {
  for (const auto& [owner, ids] : objects_->TakeRegistrations()) {
    std::vector<ObjectID> unknown = UpdateBorrowersAt(owner, OwnerString(), ids, 1, /*wait=*/true);
    std::vector<ObjectID> registered;
    for (const auto& id : ids) {
      if (std::find(unknown.begin(), unknown.end(), id) == unknown.end()) registered.push_back(id);
    }
    objects_->FinishRegistration(registered, true);
    objects_->FinishRegistration(unknown, false);  // its owner no longer has it: Get says lost
  }
}

void CoreWorker::HandOverRefs(const std::vector<internal::RefData>& refs, const rpc::Address& caller,
                              rpc::ObjectValue* value) {
  if (refs.empty()) return;
  std::string to = caller.ip() + ":" + std::to_string(caller.port());
  std::map<std::string, std::vector<ObjectID>> by_owner;
  for (const auto& ref : refs) {
    by_owner[ref.owner].push_back(ObjectID::FromBinary(ref.id));
    auto* listed = value->add_contained_refs();
    std::string host;
    int port = 0;
    ParseAddress(ref.owner, &host, &port).IgnoreError();
    listed->set_object_id(ref.id);
    listed->mutable_owner()->set_ip(host);
    listed->mutable_owner()->set_port(port);
  }
  // Registered before the reply goes, while this process still holds them.
  for (const auto& [owner, ids] : by_owner) UpdateBorrowersAt(owner, to, ids, 1, /*wait=*/true);
  for (const auto& ref : refs) objects_->RemoveLocalRef(ObjectID::FromBinary(ref.id));
}

std::vector<ObjectID> CoreWorker::UpdateBorrowersAt(const std::string& owner, const std::string& borrower,
                                                    const std::vector<ObjectID>& ids, int delta, bool wait) {
  if (owner == OwnerString()) return UpdateOwnBorrowers(borrower, ids, delta);
  std::vector<ObjectID> unknown;
  rpc::UpdateBorrowersRequest request;
  request.set_borrower(borrower);
  for (const auto& id : ids) {
    auto* d = request.add_deltas();
    d->set_object_id(id.Binary());
    d->set_delta(delta);
  }
  CallOptions call;
  call.timeout = std::chrono::milliseconds(10000);
  call.max_attempts = 3;
  auto client = worker_clients_->Get(owner);
  if (!wait) {
    client->Call<rpc::UpdateBorrowersReply>(ORB_RPC(UpdateBorrowers), request,
                                            [](const absl::Status&, rpc::UpdateBorrowersReply&&) {}, call);
    return unknown;
  }
  auto reply = client->CallSync<rpc::UpdateBorrowersReply>(ORB_RPC(UpdateBorrowers), request, call);
  if (!reply.ok()) return ids;  // the owner is unreachable: nothing is held there
  for (const auto& id : reply->unknown_ids()) unknown.push_back(ObjectID::FromBinary(id));
  return unknown;
}

std::vector<ObjectID> CoreWorker::UpdateOwnBorrowers(const std::string& borrower, const std::vector<ObjectID>& ids,
                                                     int delta) {
  std::vector<ObjectID> unknown;
  for (const auto& id : ids) {
    if (borrower != OwnerString()) {
      if (!objects_->UpdateBorrower(id, borrower, delta)) unknown.push_back(id);
      continue;
    }
    // This process borrowing its own object (a result's ref handed back to the
    // process that owns it): plain local references.
    if (!objects_->IsOwned(id)) {
      unknown.push_back(id);
      continue;
    }
    for (int i = 0; i < std::abs(delta); ++i) {
      if (delta > 0) {
        objects_->AddLocalRef(id);
      } else {
        objects_->RemoveLocalRef(id);
      }
    }
  }
  return unknown;
}

void CoreWorker::HandleUpdateBorrowers(const rpc::UpdateBorrowersRequest& req, rpc::UpdateBorrowersReply* reply,
                                       SendReply send) {
  for (const auto& d : req.deltas()) {
    for (const auto& id : UpdateOwnBorrowers(req.borrower(), {ObjectID::FromBinary(d.object_id())}, d.delta())) {
      reply->add_unknown_ids(id.Binary());
    }
  }
  send(grpc::Status::OK);
}
void CoreWorker::RemoveLocalReference(const std::string& id) { objects_->RemoveLocalRef(ObjectID::FromBinary(id)); }

std::vector<NodeInfo> CoreWorker::Nodes() {
  auto reply = gcs_->CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest());
  if (!reply.ok()) throw Error("cannot list nodes: " + std::string(reply.status().message()));
  std::vector<NodeInfo> nodes;
  for (const auto& n : reply->nodes()) {
    NodeInfo info;
    info.node_id = NodeID::FromBinary(n.node_id()).Hex();
    info.address = n.ip() + ":" + std::to_string(n.raylet_port());
    info.alive = n.state() == rpc::NodeInfo::ALIVE;
    info.resources_total.insert(n.resources_total().begin(), n.resources_total().end());
    info.resources_available.insert(n.resources_available().begin(), n.resources_available().end());
    info.labels.insert(n.labels().begin(), n.labels().end());
    info.object_store_memory = n.object_store_bytes();
    nodes.push_back(std::move(info));
  }
  return nodes;
}

void CoreWorker::RunTaskLoop() { receiver_->Run(); }

void CoreWorker::HandlePushTasks(const rpc::PushTasksRequest& req, rpc::PushTasksReply* reply, SendReply send) {
  if (options_.is_driver) return send(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "a driver runs no tasks"));
  if (req.intended_worker_id() != options_.worker_id.Binary()) {
    return send(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "tasks pushed to the wrong worker"));
  }
  receiver_->HandlePushTasks(req, reply, std::move(send));
}

absl::Status CoreWorker::StartCallStream() {
  // A driver runs no tasks; ORB_CALL_STREAM=0 keeps a worker on gRPC (to compare the two).
  const char* enabled = std::getenv("ORB_CALL_STREAM");
  if (options_.is_driver || (enabled && std::string(enabled) == "0")) return absl::OkStatus();
  CallStreamServer::Options stream;
  stream.token = options_.token;
  stream.unix_path = unix_socket_.empty() ? "" : unix_socket_ + ".calls";
  stream.tcp_ip = options_.node_ip;
  auto started = CallStreamServer::Start(
      stream, [this](uint8_t method, std::string_view payload, CallStreamServer::Responder responder) {
        HandleCallStream(method, payload, std::move(responder));
      });
  if (!started.ok()) return started.status();
  call_stream_ = std::move(*started);
  receiver_->ServeCallStream(call_stream_.get());
  return absl::OkStatus();
}

void CoreWorker::HandleCallStream(uint8_t method, std::string_view payload, CallStreamServer::Responder responder) {
  if (method != call_stream::kPushTasks) {
    return responder.Fail(absl::UnimplementedError("no call-stream method " + std::to_string(method)));
  }
  auto request = std::make_shared<rpc::PushTasksRequest>();
  if (!request->ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return responder.Fail(absl::InvalidArgumentError("the call's payload is not a PushTasksRequest"));
  }
  if (request->intended_worker_id() != options_.worker_id.Binary()) {
    return responder.Fail(absl::FailedPreconditionError("tasks pushed to the wrong worker"));
  }
  // Counted with the gRPC pushes: the same call, whichever way it came.
  static HistogramSeries* latency = RpcServerLatency("CoreWorkerService", "PushTasks");
  auto start = std::chrono::steady_clock::now();
  receiver_->RunArrived(std::move(request), [responder, start](const grpc::Status& status,
                                                               const rpc::PushTasksReply& reply) mutable {
    latency->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (status.ok()) {
      responder.Reply(reply.SerializeAsString());
    } else {
      responder.Fail(FromGrpc(status));
    }
  });
}

void CoreWorker::HandleReportTaskResults(const rpc::ReportTaskResultsRequest& req, rpc::ReportTaskResultsReply*,
                                         SendReply send) {
  for (const auto& result : req.results()) {
    if (submitter_ && submitter_->CompleteEarly(result)) continue;
    if (actor_submitter_) actor_submitter_->CompleteEarly(result);
  }
  send(grpc::Status::OK);
}

void CoreWorker::HandleReportGeneratorItem(const rpc::ReportGeneratorItemRequest& req, rpc::ReportGeneratorItemReply* reply,
                                           SendReply send) {
  streams_->OnItem(req, [reply, send](bool stop) {
    reply->set_stop(stop);
    send(grpc::Status::OK);
  });
}

void CoreWorker::CancelTask(const internal::RefData& ref, bool force, bool recursive) {
  canceller_->Cancel(ObjectID::FromBinary(ref.id), ref.owner, force, recursive);
}

void CoreWorker::HandleRemoteCancelTask(const rpc::RemoteCancelTaskRequest& req, rpc::RemoteCancelTaskReply* reply,
                                        SendReply send) {
  if (!canceller_) return send(grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker is starting"));
  canceller_->HandleRemoteCancelTask(req, reply, std::move(send));
}

void CoreWorker::HandleCancelTask(const rpc::CancelTaskRequest& req, rpc::CancelTaskReply* reply, SendReply send) {
  if (!canceller_) return send(grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker is starting"));
  canceller_->HandleCancelTask(req, reply, std::move(send));
}

}  // namespace orb
