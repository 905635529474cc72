// Raylet: leaving the cluster without losing objects (DrainNode, AdoptObject). A node
// drained for scale-down hands every primary copy its owners still reference to another
// node (ObjectEvacuator) before it says yes; the nodes that adopt them pull the bytes
// and keep them as primaries.
#include <spdlog/spdlog.h>

#include <set>

#include "raylet/object_manager/object_evacuator.h"
#include "raylet/raylet.h"

namespace orb {
namespace {

grpc::Status Invalid(const std::string& message) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message); }

}  // namespace

void Raylet::HandleDrainNode(const rpc::DrainNodeRequest& req, rpc::DrainNodeReply* reply, SendReply send) {
  absl::Status drained = lease_granter_->Drain();
  if (!drained.ok()) {
    reply->set_accepted(false);
    reply->set_rejection(std::string(drained.message()));
    return send(grpc::Status::OK);
  }
  auto refuse = [this, reply, send](const std::string& why) {
    lease_granter_->Undrain();
    reply->set_accepted(false);
    reply->set_rejection(why);
    spdlog::warn("drain refused: {}", why);
    send(grpc::Status::OK);
  };
  std::vector<WorkerID> actors = lease_granter_->ActorWorkers();
  if (actors.empty()) return EvacuateObjects(req, reply, send);
  // Its actors restart elsewhere first (by intent: their restarts are not spent).
  rpc::RelocateActorsRequest relocate;
  relocate.set_node_id(node_id_.Binary());
  relocate.set_reason(req.reason());
  for (const auto& w : actors) relocate.add_worker_ids(w.Binary());
  CallOptions call;
  call.timeout = std::chrono::seconds(10);
  gcs_->Call<rpc::RelocateActorsReply>(
      ORB_RPC(RelocateActors), relocate,
      [this, req, reply, send, refuse](const absl::Status& status, rpc::RelocateActorsReply&& answer) {
        loop_.Post([this, req, reply, send, refuse, status, answer = std::move(answer)] {
          if (!status.ok()) return refuse("the GCS could not move its actors: " + status.ToString());
          if (answer.refused_size() > 0) {
            return refuse(std::to_string(answer.refused_size()) + " actor(s) cannot move: " + answer.refused(0));
          }
          spdlog::info("draining ({}): {} actor(s) restart on other nodes", req.reason(), answer.relocated());
          AfterActorsLeft(std::chrono::steady_clock::now() + kActorsLeaveTimeout, req, reply, send, refuse);
        });
      },
      call);
}

void Raylet::AfterActorsLeft(std::chrono::steady_clock::time_point deadline, const rpc::DrainNodeRequest& req,
                             rpc::DrainNodeReply* reply, SendReply send, std::function<void(std::string)> refuse) {
  // The GCS gives their leases back (their workers are stopped): then the objects move.
  if (lease_granter_->num_leases() == 0) return EvacuateObjects(req, reply, send);
  if (std::chrono::steady_clock::now() >= deadline) {
    return refuse(std::to_string(lease_granter_->num_leases()) + " actor lease(s) were not given back within " +
                  std::to_string(kActorsLeaveTimeout.count()) + " s");
  }
  loop_.RunAfter(std::chrono::milliseconds(50), [this, deadline, req, reply, send, refuse] {
    AfterActorsLeft(deadline, req, reply, send, refuse);
  });
}

void Raylet::EvacuateObjects(const rpc::DrainNodeRequest& req, rpc::DrainNodeReply* reply, SendReply send) {
  std::vector<EvacuatedObject> objects;
  for (auto& p : object_store_.Primaries()) {
    EvacuatedObject o;
    o.id = p.id;
    o.size = p.size;
    o.owner = p.owner;
    auto address = owner_addresses_.find(p.owner);
    if (address != owner_addresses_.end()) o.owner_address = address->second;
    o.copies = std::move(p.copies);
    objects.push_back(std::move(o));
  }
  // Nodes that stay, unless only nodes that may leave too can take the objects.
  std::set<std::string> avoid(req.avoid_node_ids().begin(), req.avoid_node_ids().end());
  std::vector<NodeID> targets, fallback;
  for (const auto& node : lease_granter_->Nodes()) {
    if (node.alive && node.id != node_id_ && !node.address.empty() && !node.object_manager_address.empty()) {
      (avoid.count(node.id.Hex()) ? fallback : targets).push_back(node.id);
    }
  }
  if (targets.empty()) targets = std::move(fallback);
  if (!objects.empty()) {
    spdlog::info("draining ({}): moving {} object(s) to {} other node(s)", req.reason(), objects.size(),
                 targets.size());
  }
  evacuator_->Evacuate(std::move(objects), std::move(targets),
                       [this, reason = req.reason(), reply, send](const ObjectEvacuator::Result& result) {
                         reply->set_objects_moved(result.moved);
                         reply->set_bytes_moved(static_cast<int64_t>(result.bytes_moved));
                         if (!result.failures.empty()) {
                           // Keep the node: what could not move would be lost with it.
                           lease_granter_->Undrain();
                           reply->set_accepted(false);
                           std::string why = std::to_string(result.failures.size()) +
                                             " object(s) could not move to another node: " + result.failures[0];
                           spdlog::warn("drain refused: {}", why);
                           reply->set_rejection(why);
                           return send(grpc::Status::OK);
                         }
                         reply->set_accepted(true);
                         spdlog::info("drained ({}): {} object(s), {} bytes moved, {} let go", reason, result.moved,
                                      result.bytes_moved, result.dropped);
                         send(grpc::Status::OK);
                       });
}

void Raylet::HandleAdoptObject(const rpc::AdoptObjectRequest& req, rpc::AdoptObjectReply* reply, SendReply send) {
  ObjectID id = ObjectID::FromBinary(req.object_id());
  WorkerID owner = WorkerID::FromBinary(req.owner_worker_id());
  if (id.IsNil() || req.size() < 0 || owner.IsNil()) {
    return send(Invalid("AdoptObject needs a 20-byte object_id, its owner_worker_id and a size >= 0"));
  }
  auto refuse = [reply, send](rpc::ErrorType type, std::string why) {
    reply->mutable_error()->set_type(type);
    reply->mutable_error()->set_message(std::move(why));
    send(grpc::Status::OK);
  };
  if (lease_granter_->draining()) return refuse(rpc::OBJECT_STORE_FULL, "node " + node_id_.Hex() + " is leaving too");
  const NodeView* source = lease_granter_->FindNode(NodeID::FromBinary(req.source_node_id()));
  if (!source || !source->alive || source->object_manager_address.empty()) {
    return refuse(rpc::OBJECT_LOST, "the leaving node " + NodeID::FromBinary(req.source_node_id()).Hex() +
                                        " is not reachable from node " + node_id_.Hex());
  }
  if (!req.owner_address().empty()) owner_addresses_[owner] = req.owner_address();
  std::vector<NodeID> copies;
  for (const auto& c : req.copy_node_ids()) {
    NodeID node = NodeID::FromBinary(c);
    if (node != node_id_ && node != source->id) copies.push_back(node);
  }
  object_puller_->Pull(id, static_cast<uint64_t>(req.size()), source->object_manager_address, adopt_reader_, owner,
                       [this, id, owner, copies, reply, send](const ObjectLocationInArena& loc,
                                                              const rpc::ErrorInfo& error) {
                         if (error.type() != rpc::ERROR_NONE) {
                           *reply->mutable_error() = error;
                           return send(grpc::Status::OK);
                         }
                         absl::Status adopted = object_store_.Adopt(id, owner, copies);
                         if (loc.found) object_store_.Release({id}, adopt_reader_);
                         if (!adopted.ok()) {
                           reply->mutable_error()->set_type(rpc::OBJECT_LOST);
                           reply->mutable_error()->set_message(std::string(adopted.message()));
                         }
                         send(grpc::Status::OK);
                       });
}

void Raylet::MakeEvacuator() {
  ObjectEvacuator::Peers peers;
  peers.adopt = [this](const NodeID& target, const EvacuatedObject& o, std::function<void(absl::Status)> done) {
    const NodeView* node = lease_granter_->FindNode(target);
    if (!node || !node->alive) return done(absl::UnavailableError("node " + target.Hex() + " is gone"));
    rpc::AdoptObjectRequest request;
    request.set_object_id(o.id.Binary());
    request.set_source_node_id(node_id_.Binary());
    request.set_size(static_cast<int64_t>(o.size));
    request.set_owner_worker_id(o.owner.Binary());
    request.set_owner_address(o.owner_address);
    for (const auto& c : o.copies) request.add_copy_node_ids(c.Binary());
    CallOptions call;
    call.timeout = kAdoptTimeout;
    raylet_clients_->Get(node->address)
        ->Call<rpc::AdoptObjectReply>(
            ORB_RPC(AdoptObject), request,
            [this, done](const absl::Status& status, rpc::AdoptObjectReply&& reply) {
              absl::Status result = status;
              if (status.ok() && reply.error().type() != rpc::ERROR_NONE) {
                result = absl::UnavailableError(reply.error().message());
              }
              loop_.Post([done, result] { done(result); });
            },
            call);
  };
  peers.tell_owner = [this](const EvacuatedObject& o, const NodeID& target,
                            std::function<void(absl::StatusOr<bool>)> done) {
    rpc::ObjectMovedRequest request;
    request.set_object_id(o.id.Binary());
    request.set_from_node_id(node_id_.Binary());
    request.set_to_node_id(target.Binary());
    worker_clients_.Get(o.owner_address)
        ->Call<rpc::ObjectMovedReply>(
            ORB_RPC(ObjectMoved), request,
            [this, done](const absl::Status& status, rpc::ObjectMovedReply&& reply) {
              absl::StatusOr<bool> result = status.ok() ? absl::StatusOr<bool>(reply.accepted()) : status;
              loop_.Post([done, result] { done(result); });
            },
            CallOptions::Retried());
  };
  peers.free_at = [this](const NodeID& target, const ObjectID& id) { DeleteAt(target, {id}); };
  peers.hand_over = [this](const ObjectID& id) { object_store_.HandOver(id); };
  evacuator_ = std::make_unique<ObjectEvacuator>(std::move(peers));
}

}  // namespace orb
