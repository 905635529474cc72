#include "gossip/grpc_transport.h"

namespace orb::gossip {

GrpcGossipTransport::GrpcGossipTransport(std::string token, std::chrono::milliseconds deadline,
                                         std::function<void(const std::string&)> on_rejected)
    : token_(std::move(token)), deadline_(deadline), on_rejected_(std::move(on_rejected)) {}

GrpcGossipTransport::~GrpcGossipTransport() = default;

void GrpcGossipTransport::Send(const std::string& address, const rpc::GossipMessage& message) {
  RpcClient<rpc::GossipService>* client;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Channel& channel = channels_[address];
    if (!channel.client) channel.client = std::make_unique<RpcClient<rpc::GossipService>>(address, token_);
    channel.last_used = std::chrono::steady_clock::now();
    client = channel.client.get();
  }
  rpc::DeliverGossipRequest request;
  request.set_message(message.SerializeAsString());
  CallOptions options;
  options.timeout = deadline_;
  options.max_attempts = 1;
  client->Call<rpc::DeliverGossipReply>(
      ORB_RPC(DeliverGossip), request,
      [this, address](const absl::Status& status, rpc::DeliverGossipReply&&) {
        if (status.code() == absl::StatusCode::kFailedPrecondition && on_rejected_) on_rejected_(address);
      },
      options);
}

void GrpcGossipTransport::DropIdleChannels(std::chrono::milliseconds idle) {
  std::map<std::string, Channel> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = std::chrono::steady_clock::now();
    for (auto it = channels_.begin(); it != channels_.end();) {
      if (now - it->second.last_used > idle) {
        dropped.insert(channels_.extract(it++));
      } else {
        ++it;
      }
    }
  }
  // Destroying a client drains its calls: done outside the lock.
}

GossipGrpcService::GossipGrpcService(Deliver deliver, ServiceContext context)
    : RpcService(rpc::GossipService::service_full_name(), std::move(context)), deliver_(std::move(deliver)) {}

void GossipGrpcService::HandleDeliverGossip(const rpc::DeliverGossipRequest& request, rpc::DeliverGossipReply*,
                                            SendReply send) {
  if (deliver_(request.message()) == GossipNode::Received::kWrongCluster) {
    return send(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                             "gossip from another cluster (a GCS restarted without storage?)"));
  }
  send(grpc::Status::OK);
}

}  // namespace orb::gossip
