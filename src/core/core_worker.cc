#include "core/core_worker.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>

#include "core/task_options_check.h"
#include "common/resources.h"
#include "common/runtime_env_spec.h"
#include "common/session.h"
#include "core/errors_from_proto.h"

namespace orb {
namespace {

thread_local std::string current_task_id;  // binary; empty outside a task

class CoreWorkerGrpcService : public RpcService {
 public:
  CoreWorkerGrpcService(CoreWorker* handler, ServiceContext context)
      : RpcService(rpc::CoreWorkerService::service_full_name(), std::move(context)), handler_(handler) {}
  ORB_SERVICE_METHOD(PushTasks)
  ORB_SERVICE_METHOD(GetObjectStatus)
  ORB_SERVICE_METHOD(UpdateBorrowers)
  ORB_SERVICE_METHOD(ReportTaskResults)
  ORB_SERVICE_METHOD(Exit)

 private:
  CoreWorker* handler_;
};

class InlineValue : public internal::ValueBuffer {
 public:
  explicit InlineValue(ObjectValuePtr value) : value_(std::move(value)) {}
  const char* data() const override { return value_->inline_value().data(); }
  size_t size() const override { return value_->inline_value().size(); }

 private:
  ObjectValuePtr value_;
};

std::chrono::steady_clock::time_point DeadlineFor(int64_t timeout_ms) {
  if (timeout_ms < 0) return std::chrono::steady_clock::time_point::max();
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
}

int64_t MsUntil(std::chrono::steady_clock::time_point deadline) {
  if (deadline == std::chrono::steady_clock::time_point::max()) return -1;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
  return std::max<int64_t>(0, ms);
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
    auto job = gcs_->CallSync<rpc::AddJobReply>(ORB_RPC(AddJob), add, retrying);
    if (!job.ok()) {
      return absl::Status(job.status().code(),
                          "cannot join the cluster at " + options_.gcs_address + ": " + std::string(job.status().message()));
    }
    options_.job_id = JobID::FromBinary(job->job_id());
    options_.worker_id = WorkerID::FromRandom();
  }
  if (options_.raylet_address.empty()) {
    if (auto s = FindLocalRaylet(); !s.ok()) return s;
  }
  raylet_ = std::make_unique<RpcClient<rpc::RayletService>>(options_.raylet_address, options_.token);
  worker_clients_ = std::make_unique<WorkerClientPool>(options_.token);
  raylet_clients_ = std::make_unique<RayletClientPool>(options_.token);
  objects_ = std::make_unique<ObjectTable>(
      [this](const ObjectID& id) {
        if (store_) store_->Delete(id);
      },
      [this](const std::string& owner, const ObjectID& id, int holds) {
        UpdateBorrowersAt(owner, OwnerString(), {id}, -holds, /*wait=*/false);
      });

  // Serve before registering, so the raylet can hand out our address at once.
  TaskReceiver::Hooks hooks;
  hooks.resolve_arg = [this](const rpc::ObjectRefProto& ref, const rpc::ObjectValue* known) {
    auto forever = std::chrono::steady_clock::time_point::max();
    if (known) return Materialize(ObjectID::FromBinary(ref.object_id()), std::make_shared<rpc::ObjectValue>(*known), forever);
    internal::RefData data{ref.object_id(), ref.owner().ip() + ":" + std::to_string(ref.owner().port())};
    return GetOne(data, forever);
  };
  hooks.store_result = [this](const rpc::TaskSpec& spec, std::string bytes, const std::vector<internal::RefData>& refs) {
    rpc::ObjectValue value;
    try {
      value = StoreValue(ObjectID::FromBinary(spec.return_id()), std::move(bytes), spec.caller());
    } catch (...) {
      for (const auto& ref : refs) objects_->RemoveLocalRef(ObjectID::FromBinary(ref.id));
      throw;
    }
    HandOverRefs(refs, spec.caller(), &value);
    return value;
  };
  hooks.set_current_task = [](const std::string& id) { current_task_id = id; };
  hooks.on_actor_created = [this](const std::string& actor_id, bool restarted) {
    std::lock_guard<std::mutex> lock(actor_mu_);
    hosted_actor_id_ = actor_id;
    hosted_actor_restarted_ = restarted;
  };
  hooks.on_actor_exit = [this](const std::string& actor_id) { KillActor(actor_id, /*no_restart=*/true, "exited by orb::ExitActor()"); };
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
  receiver_ = std::make_unique<TaskReceiver>(hooks);
  service_ = std::make_unique<CoreWorkerGrpcService>(this, ServiceContext{nullptr, options_.token});
  std::error_code ec;
  std::filesystem::create_directories(TempRoot() + "/sockets", ec);
  unix_socket_ = ec ? "" : TempRoot() + "/sockets/" + options_.worker_id.Hex().substr(0, 20);
  auto server = StartServer(options_.node_ip, 0, {service_.get()}, unix_socket_);
  if (!server.ok()) return server.status();
  server_ = std::move(*server);
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
  auto registered = raylet_->CallSync<rpc::RegisterWorkerReply>(ORB_RPC(RegisterWorker), reg, retrying);
  if (!registered.ok()) {
    return absl::UnavailableError("cannot register with the raylet at " + options_.raylet_address + ": " +
                                  std::string(registered.status().message()));
  }
  node_id_ = NodeID::FromBinary(registered->node_id());
  self_address_.set_node_id(node_id_.Binary());
  auto arena = ShmArena::Attach(registered->object_store_path(), static_cast<size_t>(registered->object_store_bytes()),
                                options_.is_driver ? ShmArena::Mapping::kPopulated : ShmArena::Mapping::kOnDemand);
  if (!arena.ok()) return arena.status();
  store_ = std::make_unique<StoreClient>(raylet_.get(), options_.worker_id, std::move(*arena));

  TaskSubmitterOptions submit;
  submit.job_id = options_.job_id;
  submit.worker_id = options_.worker_id;
  submit.self_address = self_address_;
  submitter_ = std::make_unique<TaskSubmitter>(&loop_, objects_.get(), raylet_.get(), raylet_clients_.get(),
                                               worker_clients_.get(), submit);
  actor_submitter_ = std::make_unique<ActorSubmitter>(objects_.get(), gcs_.get(), worker_clients_.get(), node_id_);
  loop_.Start();
  return absl::OkStatus();
}

void CoreWorker::Disconnect() {
  if (disconnected_.exchange(true)) return;
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
  if (raylet_clients_) raylet_clients_->Drain(drain);
  if (raylet_) raylet_->Drain(drain);
  if (gcs_) gcs_->Drain(drain);
  if (server_.server) server_.server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
  if (!unix_socket_.empty()) ::unlink(unix_socket_.c_str());
}

std::string CoreWorker::OwnerString() const {
  return self_address_.ip() + ":" + std::to_string(self_address_.port());
}

std::string CoreWorker::CurrentTaskId() const { return current_task_id; }

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
  absl::Status s = store_->Put(id, bytes, owner);
  if (s.code() == absl::StatusCode::kResourceExhausted) throw ObjectStoreFullError(std::string(s.message()));
  if (!s.ok()) throw Error("cannot store object " + id.Hex() + ": " + std::string(s.message()));
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
    if (s.code() == absl::StatusCode::kResourceExhausted) throw ObjectStoreFullError(std::string(s.message()));
    throw Error("cannot store object " + id.Hex() + ": " + std::string(s.message()));
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
  if (options.strategy == 2) affinity = NodeID::FromHex(options.affinity_node_id);
  rpc::TaskSpec spec;
  TaskID task = TaskID::FromRandom();
  ObjectID return_id = ObjectID::ForTaskReturn(task, 1);
  spec.set_task_id(task.Binary());
  spec.set_job_id(options_.job_id.Binary());
  spec.set_function_name(function_name);
  spec.set_return_id(return_id.Binary());
  spec.set_max_retries(options.max_retries);
  spec.set_name(options.name);
  spec.set_runtime_env(EffectiveRuntimeEnv(options.runtime_env));
  spec.set_language(static_cast<rpc::Language>(options.language));
  *spec.mutable_caller() = self_address_;
  auto* scheduling = spec.mutable_scheduling();
  scheduling->set_strategy(static_cast<rpc::SchedulingOptions::Strategy>(options.strategy));
  if (!affinity.IsNil()) scheduling->set_affinity_node_id(affinity.Binary());
  scheduling->set_affinity_soft(options.affinity_soft);
  scheduling->set_label_selector(options.label_selector);
  scheduling->set_soft_label_selector(options.soft_label_selector);
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

std::string CoreWorker::EffectiveRuntimeEnv(const std::string& requested) const {
  if (requested.empty()) return options_.runtime_env;
  auto child = ParseRuntimeEnv(requested);
  if (!child.ok()) throw RuntimeEnvError(std::string(child.status().message()));
  std::error_code ec;
  MakePathsAbsolute(&*child, std::filesystem::current_path(ec).string());
  auto parent = ParseRuntimeEnv(options_.runtime_env);  // checked when this process started
  return SerializeRuntimeEnv(MergeRuntimeEnv(parent.ok() ? *parent : RuntimeEnvSpec(), *child));
}

internal::RefData CoreWorker::SubmitTask(const std::string& function_name, std::vector<internal::ArgData> args,
                                         const internal::TaskOptionsData& options) {
  rpc::TaskSpec spec = BuildSpec(function_name, std::move(args), options, /*default_cpu=*/true);
  ObjectID return_id = ObjectID::FromBinary(spec.return_id());
  objects_->AddPending(return_id);
  submitter_->Submit(std::move(spec));
  return internal::RefData{return_id.Binary(), OwnerString()};
}

void CoreWorker::SetBlocked(bool blocked) {
  if (options_.is_driver) return;
  rpc::NotifyBlockedRequest request;
  request.set_worker_id(options_.worker_id.Binary());
  request.set_blocked(blocked);
  // Synchronous, so a retried notice cannot overtake a later one.
  (void)raylet_->CallSync<rpc::NotifyBlockedReply>(ORB_RPC(NotifyBlocked), request, CallOptions::Retried());
}

ObjectValuePtr CoreWorker::AskOwner(const ObjectID& id, const std::string& owner,
                                    std::chrono::steady_clock::time_point deadline) {
  auto client = worker_clients_->Get(owner);
  while (true) {
    int64_t left = MsUntil(deadline);
    rpc::GetObjectStatusRequest request;
    request.set_object_id(id.Binary());
    request.set_wait_ms(static_cast<int32_t>(left < 0 ? 10000 : std::min<int64_t>(left, 10000)));
    CallOptions call;
    call.timeout = std::chrono::milliseconds(request.wait_ms() + 5000);
    auto reply = client->CallSync<rpc::GetObjectStatusReply>(ORB_RPC(GetObjectStatus), request, call);
    if (!reply.ok()) {
      throw ObjectLostError("object " + id.Hex() + " is lost: its owner at " + owner + " is unreachable (" +
                            std::string(reply.status().message()) + ")");
    }
    if (reply->status() == rpc::GetObjectStatusReply::OUT_OF_SCOPE) {
      throw ObjectLostError("object " + id.Hex() + " is lost: its owner at " + owner + " no longer has it");
    }
    if (reply->status() == rpc::GetObjectStatusReply::READY) {
      return std::make_shared<const rpc::ObjectValue>(std::move(*reply->mutable_value()));
    }
    if (MsUntil(deadline) == 0) return nullptr;
  }
}

std::shared_ptr<internal::ValueBuffer> CoreWorker::Materialize(const ObjectID& id, ObjectValuePtr value,
                                                               std::chrono::steady_clock::time_point deadline) {
  switch (value->kind_case()) {
    case rpc::ObjectValue::kInlineValue:
      return std::make_shared<InlineValue>(std::move(value));
    case rpc::ObjectValue::kError:
      ThrowObjectError(value->error());
    case rpc::ObjectValue::kInStoreNodeId: {
      NodeID holder = NodeID::FromBinary(value->in_store_node_id());
      if (holder != node_id_) {
        // Another node has it: this node's raylet pulls a copy, then it is read in place.
        auto pulled = store_->Pull(id, holder, static_cast<uint64_t>(value->size()));
        if (pulled.status().code() == absl::StatusCode::kResourceExhausted) {
          throw ObjectStoreFullError(std::string(pulled.status().message()));
        }
        if (!pulled.ok()) throw ObjectLostError("object " + id.Hex() + " is lost: " + std::string(pulled.status().message()));
        return *pulled;
      }
      auto buffer = store_->Get(id, std::max<int64_t>(MsUntil(deadline), 1000));
      if (!buffer.ok()) throw ObjectLostError("object " + id.Hex() + " is lost: " + std::string(buffer.status().message()));
      return *buffer;
    }
    default:
      throw Error("object " + id.Hex() + " has no value");
  }
}

std::shared_ptr<internal::ValueBuffer> CoreWorker::GetOne(const internal::RefData& ref,
                                                          std::chrono::steady_clock::time_point deadline) {
  ObjectID id = ObjectID::FromBinary(ref.id);
  if (id.IsNil()) throw Error("Get of an empty or malformed ObjectRef");
  if (objects_->IsOwned(id)) {
    ObjectValuePtr value = objects_->GetIfReady(id);
    if (!value) {
      auto outcome = objects_->WaitReady({id}, 1, deadline);
      if (outcome == ObjectTable::WaitOutcome::kTimedOut) throw GetTimeoutError("Get timed out waiting for object " + id.Hex());
      value = objects_->GetIfReady(id);
      if (!value) throw ObjectLostError("object " + id.Hex() + " went out of scope while waiting");
    }
    return Materialize(id, std::move(value), deadline);
  }
  ObjectValuePtr value = AskOwner(id, ref.owner, deadline);
  if (!value) throw GetTimeoutError("Get timed out waiting for object " + id.Hex());
  return Materialize(id, std::move(value), deadline);
}

std::vector<std::shared_ptr<internal::ValueBuffer>> CoreWorker::Get(const std::vector<internal::RefData>& refs,
                                                                    int64_t timeout_ms) {
  auto deadline = DeadlineFor(timeout_ms);
  std::vector<std::shared_ptr<internal::ValueBuffer>> out;
  out.reserve(refs.size());
  // Fast path: every object is owned here and ready.
  bool all_ready = true;
  for (const auto& ref : refs) {
    ObjectValuePtr value = objects_->GetIfReady(ObjectID::FromBinary(ref.id));
    if (!value) {
      all_ready = false;
      break;
    }
  }
  bool blocked = !all_ready && !options_.is_driver;
  if (blocked) SetBlocked(true);
  try {
    for (const auto& ref : refs) out.push_back(GetOne(ref, deadline));
  } catch (...) {
    if (blocked) SetBlocked(false);
    throw;
  }
  if (blocked) SetBlocked(false);
  return out;
}

std::vector<bool> CoreWorker::Wait(const std::vector<internal::RefData>& refs, int num_objects, int64_t timeout_ms) {
  if (num_objects < 0 || static_cast<size_t>(num_objects) > refs.size()) {
    throw Error("Wait: num_objects must be between 0 and the number of refs (" + std::to_string(refs.size()) + ")");
  }
  std::vector<ObjectID> owned;
  std::vector<bool> ready(refs.size(), false);
  size_t borrowed_ready = 0;
  for (size_t i = 0; i < refs.size(); ++i) {
    ObjectID id = ObjectID::FromBinary(refs[i].id);
    if (objects_->IsOwned(id)) {
      owned.push_back(id);
    } else {
      // A borrowed ref counts as ready when its owner says so within the wait.
      try {
        ready[i] = AskOwner(id, refs[i].owner, DeadlineFor(0)) != nullptr;
      } catch (const ObjectLostError&) {
        ready[i] = true;  // Get will raise the loss
      }
      borrowed_ready += ready[i];
    }
  }
  size_t need = static_cast<size_t>(num_objects) > borrowed_ready ? num_objects - borrowed_ready : 0;
  objects_->WaitReady(owned, std::min(need, owned.size()), DeadlineFor(timeout_ms));
  for (size_t i = 0; i < refs.size(); ++i) {
    if (!ready[i]) ready[i] = objects_->GetIfReady(ObjectID::FromBinary(refs[i].id)) != nullptr;
  }
  return ready;
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

void CoreWorker::HandleGetObjectStatus(const rpc::GetObjectStatusRequest& req, rpc::GetObjectStatusReply* reply,
                                       SendReply send) {
  ObjectID id = ObjectID::FromBinary(req.object_id());
  auto answered = std::make_shared<std::atomic<bool>>(false);
  auto answer = [reply, send, answered](ObjectValuePtr value) {
    if (answered->exchange(true)) return;
    if (value) {
      reply->set_status(rpc::GetObjectStatusReply::READY);
      *reply->mutable_value() = *value;
    } else {
      reply->set_status(rpc::GetObjectStatusReply::PENDING);
    }
    send(grpc::Status::OK);
  };
  if (!objects_->OnReady(id, answer)) {
    reply->set_status(rpc::GetObjectStatusReply::OUT_OF_SCOPE);
    return send(grpc::Status::OK);
  }
  if (!answered->load()) {
    loop_.RunAfter(std::chrono::milliseconds(std::max(0, req.wait_ms())), [answer] { answer(nullptr); });
  }
}

void CoreWorker::HandleReportTaskResults(const rpc::ReportTaskResultsRequest& req, rpc::ReportTaskResultsReply*,
                                         SendReply send) {
  for (const auto& result : req.results()) {
    if (submitter_ && submitter_->CompleteEarly(result)) continue;
    if (actor_submitter_) actor_submitter_->CompleteEarly(result);
  }
  send(grpc::Status::OK);
}

void CoreWorker::HandleExit(const rpc::ExitRequest&, rpc::ExitReply*, SendReply send) {
  send(grpc::Status::OK);
  if (receiver_) receiver_->Stop();
}

}  // namespace orb
