// The raylet's membership in the cluster: how it describes itself to the GCS, registers
// and registers again (Rejoin), and gossips its state and learns the others' (the
// cluster view its lease placement reads).
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <iostream>

#include "raylet/raylet.h"

namespace orb {

rpc::NodeInfo Raylet::DescribeNode() const {
  rpc::NodeInfo node;
  node.set_node_id(node_id_.Binary());
  node.set_ip(options_.node_ip);
  node.set_raylet_port(port_);
  node.set_object_manager_port(object_manager_port_);
  node.set_metrics_export_port(metrics_export_port());
  if (routes_) node.set_call_stream_port(routes_->port());
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  node.set_hostname(host);
  for (const auto& [k, v] : options_.resources.ToMap()) (*node.mutable_resources_total())[k] = v;
  for (const auto& [k, v] : options_.resources.ToMap()) (*node.mutable_resources_available())[k] = v;
  for (const auto& [k, v] : options_.labels) (*node.mutable_labels())[k] = v;
  node.set_object_store_path(arena_->path());
  node.set_object_store_bytes(options_.object_store_bytes);
  return node;
}

absl::StatusOr<std::string> Raylet::RegisterWithGcs() {
  rpc::RegisterNodeRequest request;
  *request.mutable_node() = DescribeNode();
  CallOptions options;
  options.max_attempts = 20;
  options.timeout = std::chrono::milliseconds(5000);
  auto reply = gcs_->CallSync<rpc::RegisterNodeReply>(ORB_RPC(RegisterNode), request, options);
  if (!reply.ok()) {
    return absl::UnavailableError("cannot register with the GCS at " + options_.gcs_address + ": " +
                                  std::string(reply.status().message()));
  }
  return reply->cluster_id();
}

void Raylet::StartGossip(const std::string& cluster_id) {
  gossip::GossipOptions options = options_.gossip;
  options.cluster_id = cluster_id;
  gossip_transport_ = std::make_unique<gossip::GrpcGossipTransport>(
      options_.token, options.probe_timeout, [this](const std::string& address) {
        if (address == options_.gcs_address) loop_.Post([this] { Rejoin(); });
      });
  gossip_ = std::make_unique<gossip::GossipNode>(node_id_.Binary(), options_.node_ip + ":" + std::to_string(port_),
                                                 options_.gcs_address, options, &directory_, gossip_transport_.get(),
                                                 gossip::SteadyClock());
  gossip_->on_change = [this](uint32_t) { view_dirty_ = true; };
  gossip_->on_self_dead = [] {
    spdlog::critical("the GCS declared this node dead (it missed probes); exiting so that it can rejoin as a new node");
    ::kill(::getpid(), SIGTERM);
  };
  PublishLocalState();
  loop_.RunEvery(std::chrono::milliseconds(10), [this] {
    gossip_->Tick();
    if (view_dirty_) UpdateClusterView();
    return !stopping_;
  });
  loop_.RunEvery(options.round_interval, [this] {
    PublishLocalState();
    return !stopping_;
  });
  loop_.RunEvery(std::chrono::seconds(60), [this] {
    gossip_transport_->DropIdleChannels(std::chrono::seconds(60));
    return !stopping_;
  });
}

void Raylet::PublishLocalState() {
  rpc::GossipNodeState state;
  state.set_address(options_.node_ip + ":" + std::to_string(port_));
  state.set_object_manager_address(options_.node_ip + ":" + std::to_string(object_manager_port_));
  for (const auto& [k, v] : lease_granter_->total().ToMap()) (*state.mutable_resources_total())[k] = v;
  // A draining node shows nothing free, so no other raylet sends work here.
  if (!lease_granter_->draining()) {
    for (const auto& [k, v] : lease_granter_->available().ToMap()) (*state.mutable_resources_available())[k] = v;
  }
  for (const auto& [k, v] : options_.labels) (*state.mutable_labels())[k] = v;
  for (auto& d : lease_granter_->PendingDemand()) *state.add_pending_demand() = std::move(d);
  state.set_object_store_used_bytes(static_cast<int64_t>(object_store_.used()));
  state.set_draining(lease_granter_->draining());
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  state.SerializeToCodedStream(&coded);
  coded.Trim();
  if (bytes == last_published_) return;
  last_published_ = std::move(bytes);
  gossip_->SetLocalState(std::move(state));
}

void Raylet::UpdateClusterView() {
  view_dirty_ = false;
  std::vector<NodeView> nodes;
  const gossip::MemberView& view = gossip_->view();
  nodes.reserve(view.known());
  for (uint32_t index = 0; index < view.capacity(); ++index) {
    const gossip::MemberSlot* slot = view.Get(index);
    if (!slot) continue;
    NodeView v;
    v.id = NodeID::FromBinary(gossip_->directory().id(index));
    v.address = slot->payload->address();
    v.object_manager_address = slot->payload->object_manager_address();
    v.total = ResourceSet::FromAnyMap(slot->payload->resources_total());
    v.available = ResourceSet::FromAnyMap(slot->payload->resources_available());
    v.labels.insert(slot->payload->labels().begin(), slot->payload->labels().end());
    // A suspected node takes no new work until it refutes the suspicion.
    v.alive = gossip::KeyState(slot->key) == gossip::MemberState::kAlive;
    v.draining = slot->payload->draining();
    // Pulls from a node declared dead end now, not when their sockets time out.
    if (gossip::KeyState(slot->key) == gossip::MemberState::kDead && !v.object_manager_address.empty()) {
      object_puller_->SourceDead(v.object_manager_address, "node " + v.id.Hex() + " was declared dead");
    }
    nodes.push_back(std::move(v));
  }
  lease_granter_->UpdateClusterView(std::move(nodes));
}

void Raylet::Rejoin() {
  auto now = std::chrono::steady_clock::now();
  if (stopping_ || now - last_rejoin_ < std::chrono::seconds(1)) return;
  last_rejoin_ = now;
  rpc::RegisterNodeRequest again;
  *again.mutable_node() = DescribeNode();
  gcs_->Call<rpc::RegisterNodeReply>(
      ORB_RPC(RegisterNode), again, [this](const absl::Status& s, rpc::RegisterNodeReply&& reply) {
        if (s.code() == absl::StatusCode::kFailedPrecondition) {
          spdlog::critical("GCS declared this node dead: {}", s.ToString());
          ::kill(::getpid(), SIGTERM);
          return;
        }
        if (!s.ok()) return;
        loop_.Post([this, id = reply.cluster_id()] {
          if (id == cluster_id_) return;  // the same cluster (a GCS restarted on its storage)
          // A GCS on empty or another cluster's storage: its tables know nothing of this
          // node's jobs, actors or workers. Joining it would leak them all; leave instead.
          spdlog::critical("the GCS at {} now serves another cluster ({}, not {}): its storage was lost or "
                           "replaced. This node leaves (its workers with it); start it again to join the new "
                           "cluster.",
                           options_.gcs_address, id, cluster_id_);
          std::cerr << "raylet: the GCS at " << options_.gcs_address
                    << " serves another cluster (its storage was lost or replaced); leaving" << std::endl;
          ::kill(::getpid(), SIGTERM);
        });
      });
}

}  // namespace orb
