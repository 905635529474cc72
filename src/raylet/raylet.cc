#include "raylet/raylet.h"

#include <spdlog/spdlog.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <future>
#include <iostream>
#include <thread>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "common/metrics.h"
#include "common/session.h"
#include "raylet_service.grpc.pb.h"

namespace orb {
namespace {

class RayletGrpcService : public RpcService {
 public:
  RayletGrpcService(Raylet* handler, ServiceContext context)
      : RpcService(rpc::RayletService::service_full_name(), std::move(context)), handler_(handler) {}
  ORB_SERVICE_METHOD(RegisterWorker)
  ORB_SERVICE_METHOD(DisconnectWorker)
  ORB_SERVICE_METHOD(RequestWorkerLease)
  ORB_SERVICE_METHOD(ReturnWorker)
  ORB_SERVICE_METHOD(CancelWorkerLease)
  ORB_SERVICE_METHOD(NotifyBlocked)
  ORB_SERVICE_METHOD(CreateObject)
  ORB_SERVICE_METHOD(SealObject)
  ORB_SERVICE_METHOD(GetObjects)
  ORB_SERVICE_METHOD(ReleaseObjects)
  ORB_SERVICE_METHOD(DeleteObjects)
  ORB_SERVICE_METHOD(RegisterObjectCopies)
  ORB_SERVICE_METHOD(ListStoreObjects)
  ORB_SERVICE_METHOD(GetNodeStats)
  ORB_SERVICE_METHOD(DrainNode)
  ORB_SERVICE_METHOD(AdoptObject)
  ORB_SERVICE_METHOD(PullObject)
  ORB_SERVICE_METHOD(PrepareBundle)
  ORB_SERVICE_METHOD(CommitBundle)
  ORB_SERVICE_METHOD(CheckWorkers)
  ORB_SERVICE_METHOD(ListWorkers)
  ORB_SERVICE_METHOD(ListLogs)
  ORB_SERVICE_METHOD(ReadLog)
  ORB_SERVICE_METHOD(ReturnBundle)

 private:
  Raylet* handler_;
};

grpc::Status Invalid(const std::string& message) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message); }

std::vector<ObjectID> ToObjectIds(const google::protobuf::RepeatedPtrField<std::string>& binaries) {
  std::vector<ObjectID> ids;
  ids.reserve(binaries.size());
  for (const auto& b : binaries) ids.push_back(ObjectID::FromBinary(b));
  return ids;
}

// Why a store object could not be read back, as the error a reader gets: transient
// when there was no room (the bytes are still on disk), a loss when its file is damaged.
rpc::ErrorInfo UnreadableError(const absl::Status& why) {
  rpc::ErrorInfo error;
  switch (why.code()) {
    case absl::StatusCode::kResourceExhausted:
      error.set_type(rpc::OBJECT_STORE_FULL);
      break;
    case absl::StatusCode::kFailedPrecondition:
      error.set_type(rpc::OUT_OF_DISK);
      break;
    default:
      error.set_type(rpc::OBJECT_LOST);
  }
  error.set_message(std::string(why.message()));
  return error;
}

SpillOptions SpillOptionsFor(const RayletOptions& options, ShmArena* arena, EventLoop* loop) {
  SpillOptions spill;
  std::vector<std::string> dirs;
  for (const auto& dir : options.spill_dirs) {
    if (!dir.empty()) dirs.push_back(dir);
  }
  if (dirs.empty()) {
    dirs.push_back(options.session_dir.empty() ? (std::filesystem::temp_directory_path() / "orb-spill").string()
                                               : options.session_dir + "/spill");
  }
  spill.spiller = std::make_unique<ObjectSpiller>(std::move(dirs), reinterpret_cast<char*>(arena->data()), loop);
  spill.threshold = options.spill_threshold;
  return spill;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Raylet>> Raylet::Create(RayletOptions options) {
  int sockets = RemoveStaleSockets(TempRoot() + "/sockets");
  if (sockets > 0) spdlog::info("removed {} worker socket file(s) left by processes that were killed", sockets);
  int stale = ShmArena::RemoveStaleArenas();
  if (stale > 0) spdlog::info("removed {} object store file(s) left by raylets that were killed", stale);
  std::string path = "/dev/shm/orb-store-" + std::to_string(getpid()) + "-" + NodeID::FromRandom().Hex().substr(0, 8);
  auto arena = ShmArena::Create(path, options.object_store_bytes);
  if (!arena.ok()) return arena.status();
  return std::unique_ptr<Raylet>(new Raylet(std::move(options), std::move(*arena)));
}

Raylet::Raylet(RayletOptions options, std::unique_ptr<ShmArena> arena)
    : options_(std::move(options)),
      node_id_(NodeID::FromRandom()),
      arena_(std::move(arena)),
      object_store_(
          options_.object_store_bytes, &loop_, [this](uint64_t end) { return arena_->Reserve(end); },
          [this](uint64_t to, uint64_t from, uint64_t size) {
            std::memmove(arena_->data() + to, arena_->data() + from, size);
          },
          SpillOptionsFor(options_, arena_.get(), &loop_)),
      worker_metric_clients_(options_.token, std::chrono::seconds(30)),
      worker_clients_(options_.token) {
  gcs_ = std::make_unique<RpcClient<rpc::GcsService>>(options_.gcs_address, options_.token);
  raylet_clients_ = std::make_unique<ClientPool<rpc::RayletService>>(options_.token);
  // A freed primary's copies on other nodes go with it.
  object_store_.OnCopiesOrphaned([this](const ObjectID& id, const std::vector<NodeID>& nodes) {
    for (const auto& node : nodes) DeleteAt(node, {id});
  });
}

Raylet::~Raylet() { Stop(); }

absl::Status Raylet::Start() {
  service_ = std::make_unique<RayletGrpcService>(this, ServiceContext{&loop_, options_.token});
  gossip_service_ = std::make_unique<gossip::GossipGrpcService>(
      [this](const std::string& bytes) {
        return gossip_ ? gossip_->ReceiveBytes(bytes) : gossip::GossipNode::Received::kIgnored;
      },
      ServiceContext{&loop_, options_.token});
  auto server = StartServer(options_.bind, options_.port, {service_.get(), gossip_service_.get()}, "",
                            ServerLimits{options_.max_message_bytes});
  if (!server.ok()) return server.status();
  server_ = std::move(*server);
  port_ = server->port;
  // The GCS reserves and returns placement group bundles over the call stream.
  if (ControlCallStreamEnabled()) {
    auto routes = RouteStreamServer::Start(options_.bind, {service_.get()}, options_.token,
                                           ServerLimits{options_.max_message_bytes});
    if (routes.ok()) {
      routes_ = std::move(*routes);
    } else {
      spdlog::warn("no call stream for the raylet's methods ({}); the GCS uses gRPC", routes.status().ToString());
    }
  }

  if (auto s = SetUpIsolation(); !s.ok()) return s;
  WorkerPoolOptions pool;
  pool.cgroups = cgroups_.get();
  // C++ workers are forked from a fork server per job; ORB_WORKER_FORK_SERVER=0 turns it
  // off (to compare), as does a kernel that will not make the raylet a subreaper.
  const char* fork_setting = std::getenv("ORB_WORKER_FORK_SERVER");
  bool fork = !(fork_setting && std::string(fork_setting) == "0") && ForkServers::MakeSubreaper();
  fork_servers_ = std::make_unique<ForkServers>(TempRoot() + "/sockets", fork);
  pool.fork_servers = fork_servers_.get();
  pool.node_id_hex = node_id_.Hex();
  pool.raylet_address = options_.node_ip + ":" + std::to_string(port_);
  pool.node_ip = options_.node_ip;
  pool.gcs_address = options_.gcs_address;
  pool.session_dir = options_.session_dir;
  pool.token = options_.token;
  pool.default_worker_path = options_.default_worker_path;
  pool.python_executable = options_.python_executable;
  pool.python_path = options_.python_path;
  pool.idle_timeout = options_.idle_worker_timeout;
  pool.ask_to_exit = [this](const WorkerProcess& w, WorkerPoolOptions::ExitAnswer answer) { AskToExit(w, answer); };
  pool.max_starting = std::max(2, static_cast<int>(options_.resources.Get("CPU")));
  worker_pool_ = std::make_unique<WorkerPool>(pool, [this](const WorkerProcess& w) { OnWorkerDeath(w); });

  LeaseGranterOptions granter;
  granter.infeasible_grace = options_.infeasible_grace;
  granter.node_ip = options_.node_ip;
  granter.node_id = node_id_;
  granter.node_port = port_;
  granter.labels = options_.labels;
  granter.gpu_mps = UseMps();
  auto fetch_job = [this](const JobID& job, std::function<void(absl::StatusOr<rpc::JobInfo>)> done) {
    rpc::GetJobRequest request;
    request.set_job_id(job.Binary());
    gcs_->Call<rpc::GetJobReply>(ORB_RPC(GetJob), request,
                                 [job, done](const absl::Status& status, rpc::GetJobReply&& reply) {
                                   if (!status.ok()) return done(status);
                                   if (!reply.found()) return done(absl::NotFoundError("unknown job " + job.Hex()));
                                   done(std::move(*reply.mutable_job()));
                                 });
  };
  // Asked only when a request has waited out its grace with no node able to hold it.
  auto fetch_node_types = [this](std::function<void(std::vector<NodeType>)> done) {
    rpc::KvGetRequest request;
    request.set_namespace_(kNodeTypesKvNamespace);
    request.set_key(kNodeTypesKvKey);
    gcs_->Call<rpc::KvGetReply>(ORB_RPC(KvGet), request, [done](const absl::Status& status, rpc::KvGetReply&& reply) {
      if (!status.ok() || !reply.found()) return done({});
      auto types = ParseNodeTypes(reply.value());
      if (!types.ok()) {
        spdlog::warn("ignoring the autoscaler's node types: {}", types.status().ToString());
        return done({});
      }
      done(std::move(*types));
    });
  };
  lease_granter_ = std::make_unique<LeaseGranter>(options_.resources, worker_pool_.get(), fetch_job, &loop_, granter,
                                                  fetch_node_types);

  lease_granter_->OnGrant([this](const WorkerProcess& w, const ResourceSet& r) { LimitWorker(w, r); });
  StartMemoryMonitor();

  bundles_ = std::make_unique<BundleManager>(lease_granter_.get(), &loop_, std::chrono::seconds(10));

  ObjectPullerOptions puller;
  puller.token = options_.token;
  object_puller_ = std::make_unique<ObjectPuller>(&object_store_, arena_.get(), &loop_, puller);
  MakeEvacuator();
  if (auto status = StartObjectStream(); !status.ok()) return status;

  auto metrics = ServeMetrics(options_.bind, options_.metrics_export_port, [this] { return MetricsText(); });
  if (!metrics.ok()) return absl::Status(metrics.status().code(), "--metrics-export-port: " + std::string(metrics.status().message()));
  metrics_endpoint_ = std::move(*metrics);

  auto cluster_id = RegisterWithGcs();
  if (!cluster_id.ok()) return cluster_id.status();
  cluster_id_ = *cluster_id;
  StartGossip(*cluster_id);
  death_watcher_ = std::make_unique<DeathWatcher>(
      gcs_.get(), &loop_,
      [this](const rpc::JobInfo& job) {
        lease_granter_->OnJobFinished(JobID::FromBinary(job.job_id()));
        // What its driver owned here (results of its tasks, copies) goes with it.
        WorkerID driver = WorkerID::FromBinary(job.driver_worker_id());
        if (!driver.IsNil()) object_store_.ForgetWorker(driver);
        owner_addresses_.erase(driver);
        prestarted_jobs_.erase(JobID::FromBinary(job.job_id()));
      },
      [this](const rpc::ReportWorkerFailureRequest& death) {
        // This node's own deaths were handled when they were reaped.
        if (NodeID::FromBinary(death.node_id()) == node_id_) return;
        lease_granter_->ReclaimFromRequester(WorkerID::FromBinary(death.worker_id()),
                                             JobID::FromBinary(death.job_id()));
      },
      [this](const rpc::JobInfo& job) { PrestartWorkers(job); });
  death_watcher_->Start();
  loop_.RunEvery(std::chrono::milliseconds(50), [this] {
    worker_pool_->ReapDead();
    return !stopping_;
  });
  loop_.RunEvery(std::chrono::milliseconds(200), [this] {
    ForwardWorkerLogs();
    return !stopping_;
  });
  loop_.RunEvery(std::chrono::milliseconds(1000), [this] {
    worker_pool_->StopIdleWorkers();
    ReportTransfers();
    return !stopping_;
  });
  loop_.Start();
  spdlog::info("raylet {} serving on {}:{} with {} and a {}-byte object store at {}", node_id_.Hex(), options_.bind,
               port_, options_.resources.ToString(), options_.object_store_bytes, arena_->path());
  return absl::OkStatus();
}

void Raylet::Stop() {
  if (stopping_) return;
  stopping_ = true;
  if (death_watcher_) death_watcher_->Stop();
  if (metrics_endpoint_) metrics_endpoint_->Stop();  // its handlers wait on the loop
  object_stream_.reset();  // its connections pin objects through the loop: first
  // Shared: after a wait that timed out, the closure may still run.
  auto drained = std::make_shared<std::promise<void>>();
  loop_.Post([this, drained] {
    if (worker_pool_) worker_pool_->KillAll();
    drained->set_value();
  });
  drained->get_future().wait_for(std::chrono::seconds(5));
  rpc::UnregisterNodeRequest request;
  request.set_node_id(node_id_.Binary());
  request.set_reason("raylet stopped");
  CallOptions quick;
  quick.timeout = std::chrono::milliseconds(1000);
  (void)gcs_->CallSync<rpc::UnregisterNodeReply>(ORB_RPC(UnregisterNode), request, quick);
  if (server_.server) server_.server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  routes_.reset();  // its thread posts to the loop
  loop_.Stop();
}

absl::Status Raylet::StartObjectStream() {
  ObjectStreamSource source;
  source.arena = arena_->data();
  // Pins and unpins run on the loop, which owns the store; a connection thread waits.
  source.pin = [this](const ObjectID& id, const WorkerID& reader) {
    struct Pending {
      std::mutex mu;
      bool abandoned = false;  // guarded by mu: the connection stopped waiting
      std::promise<ObjectLocationInArena> found;
    };
    auto pending = std::make_shared<Pending>();
    auto answer = pending->found.get_future();
    loop_.Post([this, id, reader, pending] {
      object_store_.Get({id}, reader, std::chrono::milliseconds(0),
                        [this, id, reader, pending](std::vector<ObjectLocationInArena> locs) {
                          std::lock_guard<std::mutex> lock(pending->mu);
                          if (pending->abandoned && locs[0].found) object_store_.Release({id}, reader);
                          if (!pending->abandoned) pending->found.set_value(locs[0]);
                        });
    });
    if (answer.wait_for(std::chrono::seconds(10)) == std::future_status::ready) return answer.get();
    std::lock_guard<std::mutex> lock(pending->mu);
    if (answer.wait_for(std::chrono::seconds(0)) == std::future_status::ready) return answer.get();
    pending->abandoned = true;  // a pin taken later is released at once
    return ObjectLocationInArena();
  };
  source.unpin = [this](const ObjectID& id, const WorkerID& reader) {
    loop_.Post([this, id, reader] { object_store_.Release({id}, reader); });
  };
  auto server = ObjectStreamServer::Start(options_.bind, options_.object_manager_port, options_.token, source);
  if (!server.ok()) return server.status();
  object_stream_ = std::move(*server);
  object_manager_port_ = object_stream_->port();
  return absl::OkStatus();
}

void Raylet::PrestartWorkers(const rpc::JobInfo& job) {
  JobID id = JobID::FromBinary(job.job_id());
  if (job.prestart_workers() <= 0 || !prestarted_jobs_.insert(id).second) return;
  int cpus = static_cast<int>(lease_granter_->total().Get("CPU"));
  int n = std::min(job.prestart_workers(), cpus);
  WorkerKind kind;
  kind.language = job.language();
  int started = 0;
  for (int i = 0; i < n; ++i) {
    absl::Status s = worker_pool_->StartWorker(job, kind);
    if (!s.ok()) {
      spdlog::warn("cannot prestart workers for job {}: {}", id.Hex(), s.ToString());
      break;
    }
    started++;
  }
  if (started > 0) spdlog::info("prestarted {} worker(s) for job {} [job_id={}]", started, id.Hex(), id.Hex());
}

std::string Raylet::WorkerAddress(const WorkerProcess& w) const {
  return w.unix_socket.empty() ? options_.node_ip + ":" + std::to_string(w.port) : "unix:" + w.unix_socket;
}

void Raylet::AskToExit(const WorkerProcess& w, WorkerPoolOptions::ExitAnswer answer) {
  CallOptions call;
  call.timeout = std::chrono::seconds(10);
  WorkerID id = w.id;
  worker_clients_.Get(WorkerAddress(w))
      ->Call<rpc::ExitReply>(
          ORB_RPC(Exit), rpc::ExitRequest(),
          [this, id, answer](const absl::Status& status, rpc::ExitReply&& reply) {
            absl::StatusOr<bool> exiting = status.ok() ? absl::StatusOr<bool>(reply.exiting()) : status;
            if (status.ok() && !reply.exiting()) {
              spdlog::debug("idle worker {} stays: {} [worker_id={}]", id.Hex(), reply.why_not(), id.Hex());
            }
            loop_.Post([answer, exiting] { answer(exiting); });
          },
          call);
}

void Raylet::OnWorkerDeath(const WorkerProcess& worker) {
  object_store_.ForgetWorker(worker.id);
  owner_addresses_.erase(worker.id);
  lease_granter_->OnWorkerDeath(worker);
  // The GCS fails (or restarts) an actor that lived in it, and ends a dead driver's job.
  rpc::ReportWorkerFailureRequest report;
  report.set_worker_id(worker.id.Binary());
  report.set_node_id(node_id_.Binary());
  report.set_job_id(worker.job.Binary());
  report.set_is_driver(worker.is_driver);
  // How it ended ("killed by signal 9 (SIGKILL)"), when this raylet reaped it.
  std::optional<WorkerExit> exit = worker_pool_->ExitOf(worker.id);
  report.set_reason(worker.is_driver ? "driver exited" : exit ? exit->how : "worker process exited");
  ReportWorkerFailure(std::move(report), kReportRetryFirst);
}

void Raylet::ReportWorkerFailure(rpc::ReportWorkerFailureRequest report, std::chrono::milliseconds backoff) {
  // Sent until the GCS records it (a GCS that is down, restarting or out of disk is
  // asked again, backing off): an actor that died meanwhile is then restarted, and
  // calls to it do not hang.
  gcs_->Call<rpc::ReportWorkerFailureReply>(
      ORB_RPC(ReportWorkerFailure), report,
      [this, report, backoff](const absl::Status& status, rpc::ReportWorkerFailureReply&&) {
        if (status.ok() || stopping_ || status.code() == absl::StatusCode::kInvalidArgument ||
            status.code() == absl::StatusCode::kCancelled) {
          return;
        }
        spdlog::warn("the GCS has not recorded the death of worker {} yet ({}); asking again",
                     WorkerID::FromBinary(report.worker_id()).Hex(), status.ToString());
        loop_.RunAfter(backoff, [this, report, backoff] {
          ReportWorkerFailure(report, std::min(backoff * 2, kReportRetryMax));
        });
      });
}

void Raylet::HandleCheckWorkers(const rpc::CheckWorkersRequest& req, rpc::CheckWorkersReply* reply, SendReply send) {
  for (const auto& id : req.worker_ids()) {
    const WorkerProcess* worker = worker_pool_->Find(WorkerID::FromBinary(id));
    // A worker that ended is gone from the pool within one reap (50 ms).
    if (!worker || ::kill(worker->pid, 0) != 0) reply->add_dead_worker_ids(id);
  }
  send(grpc::Status::OK);
}

void Raylet::HandleRegisterWorker(const rpc::RegisterWorkerRequest& req, rpc::RegisterWorkerReply* reply,
                                  SendReply send) {
  WorkerID id = WorkerID::FromBinary(req.worker_id());
  if (id.IsNil()) return send(Invalid("worker_id must be 16 bytes"));
  auto s = worker_pool_->Register(req);
  if (!s.ok()) return send(ToGrpc(s));
  reply->set_node_id(node_id_.Binary());
  reply->set_object_store_path(arena_->path());
  reply->set_object_store_bytes(options_.object_store_bytes);
  send(grpc::Status::OK);
  lease_granter_->Dispatch();
}

void Raylet::HandleDisconnectWorker(const rpc::DisconnectWorkerRequest& req, rpc::DisconnectWorkerReply*,
                                    SendReply send) {
  worker_pool_->Disconnect(WorkerID::FromBinary(req.worker_id()));
  send(grpc::Status::OK);
}

void Raylet::HandleRequestWorkerLease(const rpc::RequestWorkerLeaseRequest& req, rpc::RequestWorkerLeaseReply* reply,
                                      SendReply send) {
  if (JobID::FromBinary(req.job_id()).IsNil()) return send(Invalid("job_id must be 4 bytes"));
  lease_granter_->RequestLease(req, [reply, send](rpc::RequestWorkerLeaseReply granted) {
    *reply = std::move(granted);
    send(grpc::Status::OK);
  });
}

void Raylet::HandleCancelWorkerLease(const rpc::CancelWorkerLeaseRequest& req, rpc::CancelWorkerLeaseReply* reply,
                                     SendReply send) {
  reply->set_canceled(
      lease_granter_->CancelRequest(WorkerID::FromBinary(req.requester_worker_id()), req.lease_request_id()));
  send(grpc::Status::OK);
}

void Raylet::HandleReturnWorker(const rpc::ReturnWorkerRequest& req, rpc::ReturnWorkerReply* reply, SendReply send) {
  LeaseID lease = LeaseID::FromBinary(req.lease_id());
  WorkerID worker = lease_granter_->WorkerOfLease(lease);
  lease_granter_->ReturnLease(lease, req.worker_failed(), req.worker_exiting());
  if (!req.worker_failed()) return send(grpc::Status::OK);
  // The caller lost the worker: answer once the process is seen to end (a crashed one
  // is reaped within a moment), saying how — "killed by signal 9", not "Socket closed".
  AnswerWithWorkerExit(worker, reply, std::move(send), std::chrono::steady_clock::now() + kWorkerExitWait);
}

void Raylet::AnswerWithWorkerExit(const WorkerID& worker, rpc::ReturnWorkerReply* reply, SendReply send,
                                  std::chrono::steady_clock::time_point deadline) {
  std::optional<WorkerExit> how = worker.IsNil() ? std::nullopt : worker_pool_->ExitOf(worker);
  if (!how && std::chrono::steady_clock::now() < deadline && !stopping_) {
    loop_.RunAfter(kWorkerExitPoll, [this, worker, reply, send = std::move(send), deadline]() mutable {
      AnswerWithWorkerExit(worker, reply, std::move(send), deadline);
    });
    return;
  }
  if (how) {
    reply->set_worker_exit(how->how);
    reply->set_worker_exit_type(how->type);
  }
  send(grpc::Status::OK);
}

void Raylet::HandleNotifyBlocked(const rpc::NotifyBlockedRequest& req, rpc::NotifyBlockedReply*, SendReply send) {
  lease_granter_->SetBlocked(WorkerID::FromBinary(req.worker_id()), req.blocked());
  send(grpc::Status::OK);
}

void Raylet::HandleCreateObject(const rpc::CreateObjectRequest& req, rpc::CreateObjectReply* reply, SendReply send) {
  ObjectID id = ObjectID::FromBinary(req.object_id());
  if (id.IsNil()) return send(Invalid("object_id must be 20 bytes"));
  if (req.size() < 0) return send(Invalid("object size must not be negative"));
  WorkerID owner = WorkerID::FromBinary(req.owner().worker_id());
  // Kept to tell owners where their objects go when this node is drained.
  if (!owner.IsNil() && !req.owner().ip().empty()) {
    owner_addresses_[owner] = req.owner().ip() + ":" + std::to_string(req.owner().port());
  }
  object_store_.CreateOrSpill(
      id, static_cast<uint64_t>(req.size()), owner, /*primary=*/true,
      WorkerID::FromBinary(req.writer_worker_id()),
      [reply, send](absl::StatusOr<LocalObjectStore::Created> created) {
        if (!created.ok()) {
          bool out_of_disk = created.status().code() == absl::StatusCode::kFailedPrecondition;
          reply->mutable_error()->set_type(out_of_disk ? rpc::OUT_OF_DISK : rpc::OBJECT_STORE_FULL);
          reply->mutable_error()->set_message(std::string(created.status().message()));
        } else {
          reply->set_offset(static_cast<int64_t>(created->offset));
          reply->set_already_exists(created->already_exists);
        }
        send(grpc::Status::OK);
      });
}

void Raylet::HandleSealObject(const rpc::SealObjectRequest& req, rpc::SealObjectReply*, SendReply send) {
  send(ToGrpc(object_store_.Seal(ObjectID::FromBinary(req.object_id()))));
}

void Raylet::HandleGetObjects(const rpc::GetObjectsRequest& req, rpc::GetObjectsReply* reply, SendReply send) {
  object_store_.Get(ToObjectIds(req.object_ids()), WorkerID::FromBinary(req.worker_id()),
                    std::chrono::milliseconds(std::max(0, req.timeout_ms())),
                    [reply, send](std::vector<ObjectLocationInArena> locations) {
                      for (const auto& loc : locations) {
                        auto* out = reply->add_objects();
                        out->set_found(loc.found);
                        out->set_offset(static_cast<int64_t>(loc.offset));
                        out->set_size(static_cast<int64_t>(loc.size));
                        if (!loc.unreadable.ok()) *out->mutable_error() = UnreadableError(loc.unreadable);
                      }
                      send(grpc::Status::OK);
                    });
}

void Raylet::HandleReleaseObjects(const rpc::ReleaseObjectsRequest& req, rpc::ReleaseObjectsReply*, SendReply send) {
  object_store_.Release(ToObjectIds(req.object_ids()), WorkerID::FromBinary(req.worker_id()));
  send(grpc::Status::OK);
}

void Raylet::HandleDeleteObjects(const rpc::DeleteObjectsRequest& req, rpc::DeleteObjectsReply*, SendReply send) {
  std::vector<ObjectID> here;
  std::map<NodeID, std::vector<ObjectID>> elsewhere;  // primaries on other nodes
  for (int i = 0; i < req.object_ids_size(); ++i) {
    ObjectID id = ObjectID::FromBinary(req.object_ids(i));
    NodeID primary = i < req.primary_node_ids_size() ? NodeID::FromBinary(req.primary_node_ids(i)) : NodeID();
    // This node's copy (a primary, or one pulled here) goes either way.
    here.push_back(id);
    if (!primary.IsNil() && primary != node_id_) elsewhere[primary].push_back(id);
  }
  object_store_.Delete(here);
  for (const auto& [node, ids] : elsewhere) DeleteAt(node, ids);
  send(grpc::Status::OK);
}

void Raylet::DeleteAt(const NodeID& node, const std::vector<ObjectID>& ids) {
  const NodeView* view = lease_granter_->FindNode(node);
  if (!view || !view->alive || view->address.empty()) return;  // gone, and its store with it
  rpc::DeleteObjectsRequest request;
  for (const auto& id : ids) request.add_object_ids(id.Binary());
  raylet_clients_->Get(view->address)
      ->Call<rpc::DeleteObjectsReply>(
          ORB_RPC(DeleteObjects), request, [](const absl::Status&, rpc::DeleteObjectsReply&&) {},
          CallOptions::Retried());
}

void Raylet::RegisterCopy(const ObjectID& id, const NodeID& source, const std::string& source_address) {
  rpc::RegisterObjectCopiesRequest request;
  request.add_object_ids(id.Binary());
  request.set_node_id(node_id_.Binary());
  raylet_clients_->Get(source_address)
      ->Call<rpc::RegisterObjectCopiesReply>(
          ORB_RPC(RegisterObjectCopies), request,
          [this](const absl::Status& status, rpc::RegisterObjectCopiesReply&& reply) {
            if (!status.ok() || reply.unknown_object_ids_size() == 0) return;
            // The primary went while the copy was made: nobody would free the copy.
            std::vector<ObjectID> gone = ToObjectIds(reply.unknown_object_ids());
            loop_.Post([this, gone] { object_store_.Delete(gone); });
          },
          CallOptions::Retried());
}

void Raylet::HandleRegisterObjectCopies(const rpc::RegisterObjectCopiesRequest& req,
                                        rpc::RegisterObjectCopiesReply* reply, SendReply send) {
  NodeID node = NodeID::FromBinary(req.node_id());
  if (node.IsNil()) return send(Invalid("RegisterObjectCopies needs the copier's 16-byte node_id"));
  for (const auto& id : object_store_.AddCopies(ToObjectIds(req.object_ids()), node)) {
    reply->add_unknown_object_ids(id.Binary());
  }
  send(grpc::Status::OK);
}

void Raylet::HandleListStoreObjects(const rpc::ListStoreObjectsRequest&, rpc::ListStoreObjectsReply* reply,
                                    SendReply send) {
  reply->set_node_id(node_id_.Binary());
  for (const auto& o : object_store_.List()) {
    auto* out = reply->add_objects();
    out->set_object_id(o.id.Binary());
    out->set_size(static_cast<int64_t>(o.size));
    if (!o.owner.IsNil()) out->set_owner_worker_id(o.owner.Binary());
    out->set_primary(o.primary);
    out->set_sealed(o.sealed);
    out->set_pins(o.pins);
    out->set_spilled(o.spilled);
    out->set_in_memory(o.in_memory);
  }
  for (const auto& w : worker_pool_->Registered()) {
    auto* address = reply->add_workers();
    address->set_ip(options_.node_ip);
    address->set_port(w.port);
    address->set_worker_id(w.id.Binary());
    address->set_node_id(node_id_.Binary());
  }
  send(grpc::Status::OK);
}

void Raylet::HandlePullObject(const rpc::PullObjectRequest& req, rpc::PullObjectReply* reply, SendReply send) {
  ObjectID id = ObjectID::FromBinary(req.object_id());
  if (id.IsNil() || req.size() < 0) return send(Invalid("PullObject needs a 20-byte object_id and a size >= 0"));
  const NodeView* source = lease_granter_->FindNode(NodeID::FromBinary(req.source_node_id()));
  if (!source || !source->alive) {
    reply->mutable_error()->set_type(rpc::OBJECT_LOST);
    reply->mutable_error()->set_message("object " + id.Hex() + " is on node " +
                                        NodeID::FromBinary(req.source_node_id()).Hex() +
                                        (source ? ", which is dead" : ", which this node does not know"));
    return send(grpc::Status::OK);
  }
  if (source->object_manager_address.empty()) {
    reply->mutable_error()->set_type(rpc::OBJECT_LOST);
    reply->mutable_error()->set_message("object " + id.Hex() + " is on node " + source->id.Hex() +
                                        ", which has not said where it serves objects");
    return send(grpc::Status::OK);
  }
  NodeID source_id = source->id;
  std::string source_address = source->address;
  node_of_stream_[source->object_manager_address] = source_id;
  object_puller_->Pull(id, static_cast<uint64_t>(req.size()), source->object_manager_address,
                       WorkerID::FromBinary(req.worker_id()), WorkerID::FromBinary(req.owner_worker_id()),
                       [this, id, source_id, source_address, reply, send](const ObjectLocationInArena& loc,
                                                                          const rpc::ErrorInfo& error) {
                         if (error.type() != rpc::ERROR_NONE) {
                           *reply->mutable_error() = error;
                         } else {
                           if (source_id != node_id_) RegisterCopy(id, source_id, source_address);
                           reply->mutable_location()->set_found(loc.found);
                           reply->mutable_location()->set_offset(static_cast<int64_t>(loc.offset));
                           reply->mutable_location()->set_size(static_cast<int64_t>(loc.size));
                         }
                         send(grpc::Status::OK);
                       });
}

void Raylet::HandleGetNodeStats(const rpc::GetNodeStatsRequest&, rpc::GetNodeStatsReply* reply, SendReply send) {
  reply->set_node_id(node_id_.Binary());
  for (const auto& [k, v] : lease_granter_->total().ToMap()) (*reply->mutable_resources_total())[k] = v;
  for (const auto& [k, v] : lease_granter_->available().ToMap()) (*reply->mutable_resources_available())[k] = v;
  for (auto& d : lease_granter_->PendingDemand()) *reply->add_pending_demand() = std::move(d);
  reply->set_num_workers(static_cast<int32_t>(worker_pool_->num_workers()));
  reply->set_num_idle_workers(static_cast<int32_t>(worker_pool_->num_idle()));
  reply->set_object_store_bytes(static_cast<int64_t>(object_store_.capacity()));
  reply->set_object_store_used_bytes(static_cast<int64_t>(object_store_.used()));
  reply->set_num_objects(static_cast<int64_t>(object_store_.num_objects()));
  for (const auto& [name, value] : CounterSnapshot()) (*reply->mutable_metrics())[name] = value;
  SpillStats spill = object_store_.spill_stats();
  auto& metrics = *reply->mutable_metrics();
  metrics["object_spilled_bytes_total"] = static_cast<int64_t>(spill.spilled_bytes_total);
  metrics["object_spilled_objects_total"] = static_cast<int64_t>(spill.spilled_objects_total);
  metrics["object_restored_bytes_total"] = static_cast<int64_t>(spill.restored_bytes_total);
  metrics["object_restored_objects_total"] = static_cast<int64_t>(spill.restored_objects_total);
  metrics["object_spill_failures_total"] = static_cast<int64_t>(spill.spill_failures_total);
  metrics["object_spilled_bytes_on_disk"] = static_cast<int64_t>(spill.bytes_on_disk);
  metrics["object_spilled_objects_on_disk"] = static_cast<int64_t>(spill.objects_on_disk);
  metrics["object_spill_files"] = static_cast<int64_t>(spill.files);
  metrics["object_restore_failures_total"] = static_cast<int64_t>(spill.restore_failures_total);
  for (const auto& d : object_store_.spill_directories()) {
    auto* out = reply->add_spill_directories();
    out->set_path(d.path);
    out->set_spilled_bytes(static_cast<int64_t>(d.spilled_bytes));
    out->set_files(static_cast<int64_t>(d.files));
    out->set_filesystem_free_bytes(d.filesystem_free_bytes);
    out->set_filesystem_total_bytes(d.filesystem_total_bytes);
    out->set_failures_total(static_cast<int64_t>(d.failures_total));
    out->set_last_error(d.last_error);
  }
  for (const auto& [name, value] : gossip::GossipMetrics(gossip_->stats())) (*reply->mutable_metrics())[name] = value;
  reply->set_worker_isolation(isolation_);
  reply->set_memory_monitor(memory_monitor_ ? memory_monitor_->Describe() : "off");
  send(grpc::Status::OK);
}

void Raylet::HandlePrepareBundle(const rpc::PrepareBundleRequest& req, rpc::PrepareBundleReply* reply,
                                 SendReply send) {
  PlacementGroupID pg = PlacementGroupID::FromBinary(req.placement_group_id());
  if (pg.IsNil() || req.bundle_index() < 0) return send(Invalid("PrepareBundle needs a placement group ID and index"));
  if (auto s = ResourceSet::Validate({req.resources().begin(), req.resources().end()}); !s.ok()) {
    return send(Invalid(std::string(s.message())));
  }
  bool prepared = bundles_->Prepare(pg.Hex(), req.bundle_index(), ResourceSet::FromAnyMap(req.resources()));
  if (prepared && req.commit()) prepared = bundles_->Commit(pg.Hex(), req.bundle_index());
  reply->set_prepared(prepared);
  send(grpc::Status::OK);
}

void Raylet::HandleCommitBundle(const rpc::CommitBundleRequest& req, rpc::CommitBundleReply* reply, SendReply send) {
  reply->set_committed(bundles_->Commit(PlacementGroupID::FromBinary(req.placement_group_id()).Hex(), req.bundle_index()));
  send(grpc::Status::OK);
}

void Raylet::HandleReturnBundle(const rpc::ReturnBundleRequest& req, rpc::ReturnBundleReply*, SendReply send) {
  bundles_->Return(PlacementGroupID::FromBinary(req.placement_group_id()).Hex(), req.bundle_index());
  send(grpc::Status::OK);
}

}  // namespace orb
