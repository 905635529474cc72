// The core worker's object reads: Get and Wait (owned objects from the ObjectTable,
// borrowed ones from their owners), reading values out of the store, rebuilding lost
// objects from lineage, and the owner's side of it (GetObjectStatus, ListOwnedObjects).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <set>

#include "core/core_worker.h"
#include "core/errors_from_proto.h"
#include "core/generator_streams.h"
#include "core/task_returns.h"

namespace orb {
namespace {

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

ObjectValuePtr CoreWorker::AskOwner(const ObjectID& id, const std::string& owner,
                                    std::chrono::steady_clock::time_point deadline, const std::string& lost_node) {
  auto client = worker_clients_->Get(owner);
  std::string report = lost_node;
  while (true) {
    int64_t left = MsUntil(deadline);
    rpc::GetObjectStatusRequest request;
    request.set_object_id(id.Binary());
    request.set_wait_ms(static_cast<int32_t>(left < 0 ? 10000 : std::min<int64_t>(left, 10000)));
    request.set_lost_copy_node_id(report);
    CallOptions call;
    call.timeout = std::chrono::milliseconds(request.wait_ms() + 5000);
    auto reply = client->CallSync<rpc::GetObjectStatusReply>(ORB_RPC(GetObjectStatus), request, call);
    if (!reply.ok()) {
      throw OwnerDiedError("object " + id.Hex() + " is lost: its owner at " + owner + " died (" +
                           std::string(reply.status().message()) + ")");
    }
    report.clear();  // told once
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
                                                               std::chrono::steady_clock::time_point deadline,
                                                               std::string* lost) {
  switch (value->kind_case()) {
    case rpc::ObjectValue::kInlineValue:
      return std::make_shared<InlineValue>(std::move(value));
    case rpc::ObjectValue::kError:
      ThrowObjectError(value->error());
    case rpc::ObjectValue::kInStoreNodeId: {
      NodeID holder = NodeID::FromBinary(value->in_store_node_id());
      absl::StatusOr<std::shared_ptr<internal::ValueBuffer>> buffer;
      if (holder != node_id_) {
        // Another node has it: this node's raylet pulls a copy, then it is read in place.
        // The owner is known here only for this process's own objects.
        WorkerID owner = objects_->IsOwned(id) ? options_.worker_id : WorkerID();
        buffer = store_->Pull(id, holder, static_cast<uint64_t>(value->size()), owner);
      } else {
        buffer = store_->Get(id, std::max<int64_t>(MsUntil(deadline), 1000));
      }
      if (buffer.ok()) return *buffer;
      // No room to read it now is not a loss: the caller hears why, and may try again.
      if (absl::IsResourceExhausted(buffer.status())) throw ObjectStoreFullError(std::string(buffer.status().message()));
      if (absl::IsFailedPrecondition(buffer.status())) throw OutOfDiskError(std::string(buffer.status().message()));
      std::string why(buffer.status().message());
      if (!lost) throw ObjectLostError("object " + id.Hex() + " is lost: " + why);
      *lost = why;
      return nullptr;
    }
    default:
      throw Error("object " + id.Hex() + " has no value");
  }
}

void CoreWorker::RebuildLost(const ObjectID& id, const std::string& lost_node, const std::string& reason,
                             std::function<void()> done) {
  // Which nodes live decides which of the object's arguments are gone with it; without
  // an answer only the copy seen lost counts as lost.
  CallOptions call;
  call.timeout = std::chrono::seconds(5);
  gcs_->Call<rpc::GetAllNodesReply>(
      ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest(),
      [this, id, lost_node, reason, done](const absl::Status& status, rpc::GetAllNodesReply&& reply) {
        std::set<std::string> alive;
        for (const auto& n : reply.nodes()) {
          if (n.state() == rpc::NodeInfo::ALIVE && n.node_id() != lost_node) alive.insert(n.node_id());
        }
        bool known = status.ok();
        auto node_alive = [&](const std::string& node) {
          return node != lost_node && (!known || alive.count(node) > 0);
        };
        ObjectTable::Recovery recovery = objects_->BeginReconstruction(id, lost_node, reason, node_alive);
        if (recovery.kind == ObjectTable::Recovery::Kind::kResubmit) {
          spdlog::warn("object {} was lost ({}); running {} task(s) again to rebuild it", id.Hex(), reason,
                       recovery.resubmit.size());
        }
        for (auto& spec : recovery.resubmit) submitter_->Submit(std::move(spec));
        done();
      },
      call);
}

void CoreWorker::RebuildLost(const ObjectID& id, const std::string& lost_node, const std::string& reason) {
  std::promise<void> rebuilt;
  RebuildLost(id, lost_node, reason, [&rebuilt] { rebuilt.set_value(); });
  rebuilt.get_future().wait();
}

std::shared_ptr<internal::ValueBuffer> CoreWorker::GetOne(const internal::RefData& ref,
                                                          std::chrono::steady_clock::time_point deadline) {
  ObjectID id = ObjectID::FromBinary(ref.id);
  if (id.IsNil()) throw Error("Get of an empty or malformed ObjectRef");
  if (!objects_->IsOwned(id)) return GetBorrowed(id, ref.owner, deadline);
  while (true) {
    ObjectValuePtr value = objects_->GetIfReady(id);
    if (!value) {
      auto outcome = objects_->WaitReady({id}, 1, deadline);
      if (outcome == ObjectTable::WaitOutcome::kTimedOut) throw GetTimeoutError("Get timed out waiting for object " + id.Hex());
      value = objects_->GetIfReady(id);
      if (!value) throw ObjectLostError("object " + id.Hex() + " went out of scope while waiting");
    }
    std::string lost;
    if (auto buffer = Materialize(id, value, deadline, &lost)) return buffer;
    // Every copy is gone: rebuild it from its lineage if it can be (or its value becomes
    // the error saying why not), then wait again.
    RebuildLost(id, value->in_store_node_id(), lost);
  }
}

std::shared_ptr<internal::ValueBuffer> CoreWorker::GetBorrowed(const ObjectID& id, const std::string& owner,
                                                               std::chrono::steady_clock::time_point deadline) {
  // A copy the owner names may be lost; the owner is told, rebuilds the object if it
  // can, and is asked again. A few rounds at most: each costs the owner a re-run.
  constexpr int kMaxLossReports = 4;
  std::string lost_node;
  bool blocked = false;
  for (int reports = 0;; ++reports) {
    ObjectValuePtr value;
    try {
      value = AskOwner(id, owner, deadline, lost_node);
    } catch (...) {
      if (blocked) SetBlocked(false);
      throw;
    }
    if (blocked) SetBlocked(false);
    blocked = false;
    if (!value) throw GetTimeoutError("Get timed out waiting for object " + id.Hex());
    std::string lost;
    if (auto buffer = Materialize(id, value, deadline, reports < kMaxLossReports ? &lost : nullptr)) return buffer;
    lost_node = value->in_store_node_id();
    spdlog::warn("object {} could not be read ({}); asking its owner at {} to rebuild it", id.Hex(), lost, owner);
    // Rebuilding may need this worker's CPU (the tasks that make the object): lend it.
    if (!options_.is_driver) {
      SetBlocked(true);
      blocked = true;
    }
  }
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
  if (!all_ready && !options_.is_driver) {
    // Borrowed objects (a task's arguments) are usually ready: lend the CPU only to wait.
    std::vector<bool> ready = Wait(refs, static_cast<int>(refs.size()), 0);
    all_ready = std::all_of(ready.begin(), ready.end(), [](bool r) { return r; });
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
  std::vector<size_t> borrowed;
  std::vector<bool> ready(refs.size(), false);
  size_t have = 0;
  for (size_t i = 0; i < refs.size(); ++i) {
    ObjectID id = ObjectID::FromBinary(refs[i].id);
    if (objects_->IsOwned(id)) {
      owned.push_back(id);
    } else {
      borrowed.push_back(i);
    }
    ready[i] = objects_->GetIfReady(id) != nullptr;
    have += ready[i];
  }
  if (have >= static_cast<size_t>(num_objects)) return ready;  // nothing to wait for
  // No time to wait: borrowed objects are asked about once (a task's arguments are
  // usually ready: its get or wait then lends no CPU and starts no other worker).
  if (timeout_ms == 0) return borrowed.empty() ? ready : PollOwnersOnce(refs, borrowed, std::move(ready));
  // While it waits, a worker lends its CPU (the objects may need it), as Get does.
  struct LentCpu {
    CoreWorker* worker;
    explicit LentCpu(CoreWorker* w) : worker(w) { worker->SetBlocked(true); }
    ~LentCpu() { worker->SetBlocked(false); }
  } lent(this);
  auto deadline = DeadlineFor(timeout_ms);
  if (borrowed.empty()) {
    objects_->WaitReady(owned, static_cast<size_t>(num_objects), deadline);
  } else {
    // Borrowed refs: long polls to their owners, all at once; owned ones count as they
    // become ready; until enough are, or the time is up.
    auto state = std::make_shared<WaitState>();
    state->ready.assign(refs.size(), false);
    for (size_t i = 0; i < refs.size(); ++i) {
      ObjectID id = ObjectID::FromBinary(refs[i].id);
      if (objects_->IsOwned(id)) {
        objects_->OnReady(id, [state, i](ObjectValuePtr) { state->Mark(i); });
      } else {
        PollOwner(state, i, id, refs[i].owner, deadline);
      }
    }
    std::unique_lock<std::mutex> lock(state->mu);
    auto enough = [&] { return state->num_ready >= static_cast<size_t>(num_objects); };
    if (deadline == std::chrono::steady_clock::time_point::max()) {
      state->cv.wait(lock, enough);
    } else {
      state->cv.wait_until(lock, deadline, enough);
    }
    state->done = true;
    ready = state->ready;
  }
  for (size_t i = 0; i < refs.size(); ++i) {
    if (!ready[i]) ready[i] = objects_->GetIfReady(ObjectID::FromBinary(refs[i].id)) != nullptr;
  }
  return ready;
}

std::vector<bool> CoreWorker::PollOwnersOnce(const std::vector<internal::RefData>& refs,
                                             const std::vector<size_t>& borrowed, std::vector<bool> ready) {
  struct Poll {
    std::mutex mu;
    std::condition_variable cv;
    size_t answered = 0;      // guarded by mu
    std::vector<bool> ready;  // guarded by mu
  };
  auto poll = std::make_shared<Poll>();
  poll->ready = std::move(ready);
  for (size_t i : borrowed) {
    rpc::GetObjectStatusRequest request;
    request.set_object_id(refs[i].id);
    request.set_wait_ms(0);
    CallOptions call;
    call.timeout = std::chrono::milliseconds(2000);
    worker_clients_->Get(refs[i].owner)
        ->Call<rpc::GetObjectStatusReply>(
            ORB_RPC(GetObjectStatus), request,
            [poll, i](const absl::Status& status, rpc::GetObjectStatusReply&& reply) {
              std::lock_guard<std::mutex> lock(poll->mu);
              // Ready, or lost (its owner gone, or no longer having it): Get says which.
              if (!status.ok() || reply.status() != rpc::GetObjectStatusReply::PENDING) poll->ready[i] = true;
              poll->answered++;
              poll->cv.notify_all();
            },
            call);
  }
  std::unique_lock<std::mutex> lock(poll->mu);
  poll->cv.wait_for(lock, std::chrono::milliseconds(2500), [&] { return poll->answered == borrowed.size(); });
  return poll->ready;
}

void CoreWorker::PollOwner(std::shared_ptr<WaitState> state, size_t index, const ObjectID& id, const std::string& owner,
                           std::chrono::steady_clock::time_point deadline) {
  {
    std::lock_guard<std::mutex> lock(state->mu);
    if (state->done) return;
  }
  int64_t left = MsUntil(deadline);
  rpc::GetObjectStatusRequest request;
  request.set_object_id(id.Binary());
  request.set_wait_ms(static_cast<int32_t>(left < 0 ? 10000 : std::min<int64_t>(left, 10000)));
  CallOptions call;
  call.timeout = std::chrono::milliseconds(request.wait_ms() + 5000);
  worker_clients_->Get(owner)->Call<rpc::GetObjectStatusReply>(
      ORB_RPC(GetObjectStatus), request,
      [this, state, index, id, owner, deadline](const absl::Status& status, rpc::GetObjectStatusReply&& reply) {
        // Ready, or lost (its owner gone, or no longer having it): Get will say which.
        if (!status.ok() || reply.status() != rpc::GetObjectStatusReply::PENDING) return state->Mark(index);
        if (MsUntil(deadline) != 0) PollOwner(state, index, id, owner, deadline);
      },
      call);
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
  int wait_ms = std::max(0, req.wait_ms());
  auto wait_for_it = [this, id, answer, reply, send, answered, wait_ms] {
    if (!objects_->OnReady(id, answer)) {
      reply->set_status(rpc::GetObjectStatusReply::OUT_OF_SCOPE);
      return send(grpc::Status::OK);
    }
    if (!answered->load()) {
      loop_.RunAfter(std::chrono::milliseconds(wait_ms), [answer] { answer(nullptr); });
    }
  };
  ObjectValuePtr known = req.lost_copy_node_id().empty() ? nullptr : objects_->GetIfReady(id);
  if (!known || known->in_store_node_id() != req.lost_copy_node_id()) return wait_for_it();
  // A reader could not get the copy this process named: rebuild the object, then answer
  // once it is ready.
  RebuildLost(id, req.lost_copy_node_id(),
              "a reader could not fetch it from node " + NodeID::FromBinary(req.lost_copy_node_id()).Hex(),
              [this, wait_for_it] { loop_.Post(wait_for_it); });
}

void CoreWorker::HandleObjectMoved(const rpc::ObjectMovedRequest& req, rpc::ObjectMovedReply* reply,
                                   SendReply send) {
  ObjectID id = ObjectID::FromBinary(req.object_id());
  reply->set_accepted(!id.IsNil() && objects_->MoveInStore(id, req.from_node_id(), req.to_node_id()));
  if (reply->accepted()) {
    spdlog::info("object {} moved from node {} to node {}", id.Hex(), NodeID::FromBinary(req.from_node_id()).Hex(),
                 NodeID::FromBinary(req.to_node_id()).Hex());
  }
  send(grpc::Status::OK);
}

void CoreWorker::HandleListOwnedObjects(const rpc::ListOwnedObjectsRequest&, rpc::ListOwnedObjectsReply* reply,
                                        SendReply send) {
  *reply->mutable_address() = self_address_;
  reply->set_is_driver(options_.is_driver);
  for (const auto& o : objects_->ListOwned()) {
    auto* out = reply->add_owned();
    out->set_object_id(o.id.Binary());
    if (!o.value) {
      out->set_state(o.released ? rpc::OwnedObjectInfo::RELEASED : rpc::OwnedObjectInfo::PENDING);
    } else if (o.value->has_error()) {
      out->set_state(rpc::OwnedObjectInfo::ERROR);
      out->set_error(o.value->error().message());
    } else if (o.value->kind_case() == rpc::ObjectValue::kInStoreNodeId) {
      out->set_state(rpc::OwnedObjectInfo::IN_STORE);
      out->set_node_id(o.value->in_store_node_id());
    } else {
      out->set_state(rpc::OwnedObjectInfo::INLINE);
    }
    out->set_size(o.value ? (o.value->size() > 0 ? o.value->size()
                                                 : static_cast<int64_t>(o.value->inline_value().size()))
                          : 0);
    out->set_local_refs(o.local_refs);
    out->set_submitted_task_refs(o.task_refs);
    out->set_borrowers(o.borrowers);
    out->set_captured_refs(o.captured);
    out->set_lineage_refs(o.lineage_refs);
    out->set_reconstructable(o.reconstructable);
  }
  for (const auto& b : objects_->ListBorrowed()) {
    auto* out = reply->add_borrowed();
    out->set_object_id(b.id.Binary());
    out->set_owner(b.owner);
    out->set_holds(b.holds);
  }
  send(grpc::Status::OK);
}

internal::GeneratorNext CoreWorker::NextGeneratorItem(const internal::RefData& task_ref, int64_t timeout_ms,
                                                      internal::RefData* item) {
  std::string task_id = ObjectID(ObjectID::FromBinary(task_ref.id)).Task().Binary();
  ObjectID id;
  switch (streams_->Read(task_id, DeadlineFor(timeout_ms), item ? &id : nullptr)) {
    case GeneratorStreams::Next::kItem:
      if (item) *item = internal::RefData{id.Binary(), OwnerString()};
      return internal::GeneratorNext::kItem;
    case GeneratorStreams::Next::kEnd:
      return internal::GeneratorNext::kEnd;
    case GeneratorStreams::Next::kTimedOut:
      return internal::GeneratorNext::kTimedOut;
    case GeneratorStreams::Next::kUnknown:
      break;
  }
  throw Error("object " + ObjectID::FromBinary(task_ref.id).Hex() +
              " is not the ref of a streaming generator task this process submitted and reads (only the submitter "
              "reads its items, once)");
}

void CoreWorker::WhenReady(const internal::RefData& ref, std::function<void()> callback) {
  ObjectID id = ObjectID::FromBinary(ref.id);
  if (objects_->OnReady(id, [callback](ObjectValuePtr) { callback(); })) return;
  auto state = std::make_shared<WaitState>();
  state->ready.assign(1, false);
  state->on_ready = std::move(callback);
  PollOwner(state, 0, id, ref.owner, std::chrono::steady_clock::time_point::max());
}

void CoreWorker::DropGenerator(const internal::RefData& task_ref) {
  streams_->Drop(ObjectID(ObjectID::FromBinary(task_ref.id)).Task().Binary());
}

std::vector<internal::RefData> CoreWorker::PeekGeneratorItems(const internal::RefData& task_ref, int64_t n) {
  if (n < 0) throw Error("PeekGeneratorItems: n must be >= 0, not " + std::to_string(n));
  std::vector<internal::RefData> out;
  for (const ObjectID& id : streams_->Peek(ObjectID(ObjectID::FromBinary(task_ref.id)).Task().Binary(), n)) {
    out.push_back(internal::RefData{id.Binary(), OwnerString()});
  }
  if (out.size() < static_cast<size_t>(n)) {
    throw Error("object " + ObjectID::FromBinary(task_ref.id).Hex() +
                " is not the ref of a streaming generator task this process submitted and reads");
  }
  return out;
}

bool CoreWorker::ReportGeneratorItem(internal::ReturnData item) {
  const rpc::TaskSpec* spec = RunningTaskSpec();
  if (!spec || !spec->streaming()) {
    for (const auto& ref : item.refs) objects_->RemoveLocalRef(ObjectID::FromBinary(ref.id));
    throw Error("ReportGeneratorItem outside a streaming generator task");
  }
  int64_t index = NextGeneratorItemIndex();
  rpc::ReportGeneratorItemRequest request;
  request.set_task_id(spec->task_id());
  request.set_index(index);
  *request.mutable_value() = StoreReturn(*spec, ReturnId(*spec, static_cast<int>(index) + 2), std::move(item.value), item.refs);
  CallOptions call = CallOptions::UntilDone();  // under backpressure the owner answers when its reader catches up
  const rpc::Address& owner = spec->caller();
  auto reply = worker_clients_->Get(owner.ip() + ":" + std::to_string(owner.port()))
                   ->CallSync<rpc::ReportGeneratorItemReply>(ORB_RPC(ReportGeneratorItem), request, call);
  if (!reply.ok()) {
    throw OwnerDiedError("cannot hand item " + std::to_string(index) + " of generator '" + spec->function_name() +
                         "' to its caller: " + std::string(reply.status().message()));
  }
  return reply->stop();
}

}  // namespace orb
