// Gossip over gRPC: the transport a daemon's GossipNode sends through, and the service
// that hands received messages to it on the daemon's event loop.
//
// Each message is one unary call carrying the serialized GossipMessage, sent without
// retries under a deadline of the probe timeout: a lost message is as good as a late
// one to gossip. Channels are cached per address and dropped for addresses that have
// not been used for a while (nodes that left).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/rpc.h"
#include "common/rpc_server.h"
#include "gossip.grpc.pb.h"
#include "gossip/gossip_node.h"

namespace orb::gossip {

class GrpcGossipTransport : public GossipTransport {
 public:
  // `on_rejected(address)`: the receiver refused a message as from another cluster.
  GrpcGossipTransport(std::string token, std::chrono::milliseconds deadline,
                      std::function<void(const std::string& address)> on_rejected = nullptr);
  ~GrpcGossipTransport() override;
  void Send(const std::string& address, const rpc::GossipMessage& message) override;
  // Closes channels unused for `idle`.
  void DropIdleChannels(std::chrono::milliseconds idle);

 private:
  struct Channel {
    std::unique_ptr<RpcClient<rpc::GossipService>> client;
    std::chrono::steady_clock::time_point last_used;
  };
  std::string token_;
  std::chrono::milliseconds deadline_;
  std::function<void(const std::string&)> on_rejected_;
  std::mutex mu_;
  std::map<std::string, Channel> channels_;
};

// Serves DeliverGossip; `deliver` runs on the service context's loop. A message from
// another cluster is answered FAILED_PRECONDITION so that its sender can rejoin.
class GossipGrpcService : public RpcService {
 public:
  using Deliver = std::function<GossipNode::Received(const std::string& bytes)>;
  GossipGrpcService(Deliver deliver, ServiceContext context);
  void HandleDeliverGossip(const rpc::DeliverGossipRequest& request, rpc::DeliverGossipReply* reply, SendReply send);

 private:
  Deliver deliver_;
  ORB_SERVICE_METHOD_ON(DeliverGossip, this)
};

}  // namespace orb::gossip
