#include "core/task_canceller.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>
#include <stdexcept>

namespace orb {
namespace {

std::string AddressString(const rpc::Address& a) { return a.ip() + ":" + std::to_string(a.port()); }

bool MadeByPut(const ObjectID& id) {
  uint32_t index = 0;
  std::memcpy(&index, id.data() + TaskID::kSize, sizeof(index));
  return (index & 0x80000000u) != 0;
}

}  // namespace

void TaskCanceller::Cancel(const ObjectID& id, const std::string& owner, bool force, bool recursive) {
  if (MadeByPut(id)) throw std::invalid_argument("cannot cancel object " + id.Hex() + ": it was made by Put, not by a task");
  if (parts_.objects->IsOwned(id)) return CancelOwned(id, force, recursive);
  if (owner.empty()) {
    throw std::invalid_argument("cannot cancel object " + id.Hex() + ": its owner is not known here");
  }
  AskOwnerToCancel(id, owner, force, recursive);
}

void TaskCanceller::AskOwnerToCancel(const ObjectID& id, const std::string& owner, bool force, bool recursive) {
  rpc::RemoteCancelTaskRequest request;
  request.set_object_id(id.Binary());
  request.set_force(force);
  request.set_recursive(recursive);
  CallOptions call;
  call.timeout = std::chrono::seconds(10);
  auto reply = parts_.workers->Get(owner)->CallSync<rpc::RemoteCancelTaskReply>(ORB_RPC(RemoteCancelTask), request, call);
  if (reply.ok()) return;
  if (reply.status().code() == absl::StatusCode::kInvalidArgument) {
    throw std::invalid_argument(std::string(reply.status().message()));
  }
  // The owner is gone (its tasks and objects with it) or cannot be reached: nothing to
  // cancel from here, as with Ray.
  spdlog::warn("cancel of object {}: its owner at {} did not answer ({})", id.Hex(), owner, reply.status().ToString());
}

void TaskCanceller::HandleRemoteCancelTask(const rpc::RemoteCancelTaskRequest& req, rpc::RemoteCancelTaskReply*,
                                           SendReply send) {
  if (req.object_id().size() != ObjectID::kSize) {
    return send(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "object_id must be " + std::to_string(ObjectID::kSize) + " bytes"));
  }
  ObjectID id = ObjectID::FromBinary(req.object_id());
  if (!parts_.objects->IsOwned(id)) {
    return send(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                             "cannot cancel object " + id.Hex() + ": its owner no longer knows it"));
  }
  try {
    CancelOwned(id, req.force(), req.recursive());
  } catch (const std::invalid_argument& e) {
    return send(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, e.what()));
  }
  send(grpc::Status::OK);
}

void TaskCanceller::CancelOwned(const ObjectID& id, bool force, bool recursive) {
  if (MadeByPut(id)) throw std::invalid_argument("cannot cancel object " + id.Hex() + ": it was made by Put, not by a task");
  if (parts_.objects->GetIfReady(id)) return;  // it finished: it keeps its result
  std::string task_id = id.Task().Binary();
  CancelOutcome outcome;
  if (parts_.actor_calls && parts_.actor_calls->Owns(task_id)) {
    if (force) {
      throw std::invalid_argument("cannot cancel object " + id.Hex() +
                                  " with force: it is an actor call, and killing the actor's process would end the "
                                  "actor (kill the actor instead)");
    }
    outcome = parts_.actor_calls->Cancel(task_id);
  } else {
    outcome = parts_.tasks->Cancel(task_id);
  }
  if (outcome.kind != CancelOutcome::kOnWorker) return;
  spdlog::debug("cancelling task {} on the worker at {}", TaskID::FromBinary(task_id).Hex(), AddressString(outcome.worker));
  TellWorker(outcome.worker, task_id, force, recursive, [] {});
}

void TaskCanceller::TellWorker(const rpc::Address& worker, const std::string& task_id, bool force, bool recursive,
                               std::function<void()> done) {
  rpc::CancelTaskRequest request;
  request.set_task_id(task_id);
  request.set_force(force);
  request.set_recursive(recursive);
  CallOptions call;
  call.timeout = std::chrono::seconds(10);
  parts_.workers->Get(AddressString(worker))
      ->Call<rpc::CancelTaskReply>(
          ORB_RPC(CancelTask), request,
          [done = std::move(done)](const absl::Status&, rpc::CancelTaskReply&&) { done(); }, call);
}

void TaskCanceller::OnSubmitted(const std::string& parent_task_id, const ObjectID& child) {
  if (parent_task_id.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  children_[parent_task_id].push_back(child);
}

void TaskCanceller::OnTaskEnded(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!children_.empty()) children_.erase(task_id);
}

void TaskCanceller::CancelChildren(const std::string& task_id, bool force, std::function<void()> done) {
  std::vector<ObjectID> children;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = children_.find(task_id);
    if (it != children_.end()) children = it->second;
  }
  // Each child is cancelled here (a queued one) or on its worker; `done` once all are told.
  auto waiting = std::make_shared<std::atomic<int>>(1);
  auto shared_done = std::make_shared<std::function<void()>>(std::move(done));
  auto one_done = [waiting, shared_done] {
    if (waiting->fetch_sub(1) == 1) (*shared_done)();
  };
  for (const ObjectID& child : children) {
    if (parts_.objects->GetIfReady(child)) continue;
    std::string child_task = child.Task().Binary();
    CancelOutcome outcome;
    bool actor_call = parts_.actor_calls && parts_.actor_calls->Owns(child_task);
    outcome = actor_call ? parts_.actor_calls->Cancel(child_task) : parts_.tasks->Cancel(child_task);
    if (outcome.kind != CancelOutcome::kOnWorker) continue;
    waiting->fetch_add(1);
    TellWorker(outcome.worker, child_task, force && !actor_call, /*recursive=*/true, one_done);
  }
  one_done();
}

void TaskCanceller::HandleCancelTask(const rpc::CancelTaskRequest& req, rpc::CancelTaskReply* reply, SendReply send) {
  TaskReceiver::CancelResult result;
  if (parts_.receiver) result = parts_.receiver->Cancel(req.task_id());
  reply->set_found(result.found);
  reply->set_running(result.running);
  bool end_process = req.force() && result.running && parts_.exit_process;
  if (!req.recursive()) {
    send(grpc::Status::OK);
    if (end_process) parts_.exit_process();
    return;
  }
  // The children are told before this process may end (force), then the owner is answered.
  auto send_shared = std::make_shared<SendReply>(std::move(send));
  auto exit_process = parts_.exit_process;
  CancelChildren(req.task_id(), req.force(), [send_shared, end_process, exit_process] {
    (*send_shared)(grpc::Status::OK);
    if (end_process) exit_process();
  });
}

}  // namespace orb
