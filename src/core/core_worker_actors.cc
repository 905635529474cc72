// CoreWorker's actor calls: creating actors (registered with the GCS, which schedules
// them), calling their methods (through ActorSubmitter), killing and finding them; and
// the GCS key-value calls that collectives rendezvous through.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/node_types.h"
#include "core/core_worker.h"
#include "core/task_options_check.h"

namespace orb {
namespace {

// "Counter::Create" -> "Counter", "ORB_FUNC(Counter::Create, int)" -> "Counter"; a free
// factory keeps its own name.
std::string ClassNameOf(std::string factory_name) {
  const std::string overload = "ORB_FUNC(";
  if (factory_name.rfind(overload, 0) == 0) {
    factory_name = factory_name.substr(overload.size());
    factory_name = factory_name.substr(0, factory_name.find_first_of(",)"));
  }
  auto colons = factory_name.rfind("::");
  return colons == std::string::npos ? factory_name : factory_name.substr(0, colons);
}

}  // namespace

std::string CoreWorker::CreateActor(const std::string& factory_name, std::vector<internal::ArgData> args,
                                    const internal::ActorOptionsData& options) {
  CheckActorOptions(options);
  rpc::TaskSpec spec = BuildSpec(factory_name, std::move(args), CapturedPlacement(options.placement), /*default_cpu=*/false);
  ActorID id = ActorID::FromRandom();
  rpc::ActorCreationSpec* creation = spec.mutable_actor_creation();
  creation->set_actor_id(id.Binary());
  creation->set_max_concurrency(options.max_concurrency);
  for (const auto& [name, max_concurrency] : options.concurrency_groups) {
    (*creation->mutable_concurrency_groups())[name] = max_concurrency;
  }
  creation->set_class_name(ClassNameOf(factory_name));
  spec.set_max_retries(0);

  rpc::RegisterActorRequest request;
  rpc::ActorInfo* actor = request.mutable_actor();
  actor->set_actor_id(id.Binary());
  actor->set_job_id(options_.job_id.Binary());
  actor->set_name(options.name);
  actor->set_namespace_(options.ray_namespace.empty() ? options_.ray_namespace : options.ray_namespace);
  actor->set_class_name(creation->class_name());
  actor->set_max_restarts(options.max_restarts);
  actor->set_max_task_retries(options.max_task_retries);
  actor->set_detached(options.lifetime_set ? options.detached : options_.detached_actors_by_default);
  *actor->mutable_creation_spec() = std::move(spec);
  CallGcs<rpc::RegisterActorReply>(ORB_RPC(RegisterActor), request, "cannot create actor " + factory_name);
  if (!actor->detached() && !options_.is_driver) {  // a driver is never asked to exit for idling
    std::lock_guard<std::mutex> lock(actor_mu_);
    untracked_owned_actors_.insert(id.Binary());
  }
  return id.Binary();
}

std::vector<internal::RefData> CoreWorker::SubmitActorTask(const std::string& actor_id, const std::string& method_name,
                                                           std::vector<internal::ArgData> args,
                                                           const internal::TaskOptionsData& options) {
  if (ActorID::FromBinary(actor_id).IsNil()) throw Error("this actor handle is empty (default-constructed?)");
  if (!options.placement_group_id.empty()) throw Error("an actor call runs in its actor's placement group");
  rpc::TaskSpec spec = BuildSpec(method_name, std::move(args), options, /*default_cpu=*/false);
  spec.clear_resources();  // validated above; the call runs on the actor's resources
  spec.set_actor_id(actor_id);
  spec.set_max_retries(0);  // the actor's max_task_retries governs
  spec.set_concurrency_group(options.concurrency_group);
  std::vector<ObjectID> returns = ReturnIds(spec);
  for (const ObjectID& id : returns) {
    objects_->AddPending(id, nullptr,
                         "it was made by actor method '" + method_name + "', and actor calls do not run again to rebuild a result");
  }
  if (spec.streaming()) streams_->Add(spec);
  canceller_->OnSubmitted(CurrentTaskId(), returns[0]);
  actor_submitter_->Submit(std::move(spec));
  return RefsTo(returns);
}

void CoreWorker::KillActor(const std::string& actor_id, bool no_restart, const std::string& reason) {
  rpc::KillActorRequest request;
  request.set_actor_id(actor_id);
  request.set_no_restart(no_restart);
  request.set_reason(reason);
  CallGcs<rpc::KillActorReply>(ORB_RPC(KillActor), request, "cannot kill actor " + ActorID::FromBinary(actor_id).Hex());
  if (actor_submitter_) actor_submitter_->OnKilled(actor_id, no_restart, reason);
}

internal::RefData CoreWorker::TrackActorHandles(const std::string& actor_id) {
  if (ActorID::FromBinary(actor_id).IsNil()) throw Error("this actor handle is empty (default-constructed?)");
  {
    std::lock_guard<std::mutex> lock(actor_mu_);
    untracked_owned_actors_.erase(actor_id);  // the ref made here counts its handles
  }
  internal::RefData ref = PutWith(1, [](char* nil) { *nil = static_cast<char>(0xc0); });
  objects_->OnFree(ObjectID::FromBinary(ref.id), [this, actor_id] {
    // Freed on whatever thread dropped the last hold, maybe under a submitter's lock:
    // the kill goes from the loop, without waiting for the GCS.
    loop_.Post([this, actor_id] {
      spdlog::debug("actor {}: no handle is left; killing it", ActorID::FromBinary(actor_id).Hex());
      rpc::KillActorRequest request;
      request.set_actor_id(actor_id);
      request.set_no_restart(true);
      request.set_reason("no handle to it is left (every handle went out of scope)");
      CallOptions call;
      call.timeout = std::chrono::seconds(30);
      gcs_->Call<rpc::KillActorReply>(
          ORB_RPC(KillActor), request,
          [actor_id](const absl::Status& status, rpc::KillActorReply&&) {
            if (!status.ok()) {
              spdlog::warn("actor {}: no handle is left, but killing it failed: {}", ActorID::FromBinary(actor_id).Hex(),
                           status.ToString());
            }
          },
          call);
    });
  });
  return ref;
}

std::string CoreWorker::GetNamedActor(const std::string& name, const std::string& ray_namespace) {
  rpc::GetNamedActorRequest request;
  request.set_name(name);
  request.set_namespace_(ray_namespace.empty() ? options_.ray_namespace : ray_namespace);
  auto reply = CallGcs<rpc::GetNamedActorReply>(ORB_RPC(GetNamedActor), request, "cannot look up actor '" + name + "'");
  return reply.found() ? reply.actor().actor_id() : std::string();
}

void CoreWorker::KvPut(const std::string& ns, const std::string& key, const std::string& value) {
  rpc::KvPutRequest request;
  request.set_namespace_(ns);
  request.set_key(key);
  request.set_value(value);
  request.set_overwrite(true);
  CallGcs<rpc::KvPutReply>(ORB_RPC(KvPut), request, "GCS key-value put of '" + key + "' failed");
}

void CoreWorker::RequestResources(const std::vector<std::map<std::string, double>>& bundles) {
  nlohmann::json json = nlohmann::json::array();
  for (const auto& bundle : bundles) json.push_back(bundle);
  KvPut(kNodeTypesKvNamespace, kResourceRequestsKvKey, json.dump());
}

std::optional<std::string> CoreWorker::KvGet(const std::string& ns, const std::string& key) {
  rpc::KvGetRequest request;
  request.set_namespace_(ns);
  request.set_key(key);
  auto reply = CallGcs<rpc::KvGetReply>(ORB_RPC(KvGet), request, "GCS key-value get of '" + key + "' failed");
  if (!reply.found()) return std::nullopt;
  return std::move(*reply.mutable_value());
}

void CoreWorker::KvDeletePrefix(const std::string& ns, const std::string& prefix) {
  rpc::KvDeleteRequest request;
  request.set_namespace_(ns);
  request.set_key(prefix);
  request.set_by_prefix(true);
  CallGcs<rpc::KvDeleteReply>(ORB_RPC(KvDelete), request, "GCS key-value delete of '" + prefix + "' failed");
}

std::string CoreWorker::CurrentActorId() const {
  std::lock_guard<std::mutex> lock(actor_mu_);
  return hosted_actor_id_.empty() ? std::string() : ActorID::FromBinary(hosted_actor_id_).Hex();
}

bool CoreWorker::WasCurrentActorRestarted() const {
  std::lock_guard<std::mutex> lock(actor_mu_);
  return hosted_actor_restarted_;
}

// Asked to exit for idling: it stays while what it owns would be lost with it.
void CoreWorker::HandleExit(const rpc::ExitRequest&, rpc::ExitReply* reply, SendReply send) {
  // What it owns would be lost with it (results of tasks it submitted, objects it put):
  // while any is in use it stays, as Ray's worker does.
  size_t owned = objects_ ? objects_->num_in_scope() : 0;
  if (owned > 0) {
    reply->set_why_not("it owns " + std::to_string(owned) + " object(s) still in use");
    return send(grpc::Status::OK);
  }
  // And the actors it created die with it (the GCS ends them when their owner goes).
  {
    std::lock_guard<std::mutex> lock(actor_mu_);
    if (!untracked_owned_actors_.empty()) {
      reply->set_why_not("it created " + std::to_string(untracked_owned_actors_.size()) + " actor(s) that die with it");
      return send(grpc::Status::OK);
    }
  }
  reply->set_exiting(true);
  send(grpc::Status::OK);
  if (receiver_) receiver_->Stop();
}

}  // namespace orb
