// The node provider: how orb gets and gives back machines. The autoscaler decides how
// many nodes of each type the cluster needs; a provider makes them exist (raylet
// processes on this machine, or Kubernetes pods) and reports what exists.
//
// Contract shared by every provider:
// - CreateNodes is idempotent per request ID: calling it again with the same
//   NodeLaunch (after a timeout, a lost reply, a crash of the caller) never makes more
//   than `count` nodes for that ID. Each node carries its request ID (ProviderNode::
//   launch_request), so a caller can also count what a launch has made so far.
// - ListNodes returns the non-terminated nodes of this cluster only: a node being
//   deleted counts as gone.
// - TerminateNodes of a node that is already gone succeeds.
// - Errors: Unavailable (the backend did not answer; retry later), PermissionDenied,
//   InvalidArgument (a bad node type or template; retrying will not help).
// Implementations are safe to call from one thread at a time; the autoscaler calls them
// from its loop only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orb {

// Labels every provider puts on its nodes (Kubernetes labels on pods, tags on local
// processes), and that raylets carry as node labels so that the autoscaler can tie a
// node of the cluster to the provider's node.
inline constexpr char kLabelCluster[] = "orb.io/cluster";
inline constexpr char kLabelNodeType[] = "orb.io/node-type";
inline constexpr char kLabelNodeKind[] = "orb.io/node-kind";
inline constexpr char kLabelLaunchRequest[] = "orb.io/launch-request";
// On a raylet: the provider's ID of the node it runs on (the pod's name).
inline constexpr char kLabelProviderNodeId[] = "orb.io/provider-node-id";

enum class NodeKind { kHead, kWorker };
enum class ProviderNodeState { kPending, kRunning, kFailed };

const char* NodeKindName(NodeKind kind);            // "head", "worker"
const char* ProviderNodeStateName(ProviderNodeState state);  // "pending", "running", "failed"

struct NodeLaunch {
  std::string node_type;
  NodeKind kind = NodeKind::kWorker;
  int count = 1;
  std::string request_id;  // unique per launch decision; retries reuse it
  std::map<std::string, std::string> labels;  // extra labels for the nodes
};

struct ProviderNode {
  std::string id;  // the pod's name; the local provider's node name
  std::string node_type;
  NodeKind kind = NodeKind::kWorker;
  ProviderNodeState state = ProviderNodeState::kPending;
  std::string ip;  // empty until known
  std::string launch_request;
  std::string failure;  // why, when state is kFailed
  // Why a pending node is not running yet, as its provider says (a pod's waiting
  // reason, or why it cannot be scheduled): "ImagePullBackOff: ...". Empty: no reason given.
  std::string reason;
};

class NodeProvider {
 public:
  virtual ~NodeProvider() = default;
  // Makes `launch.count` nodes of `launch.node_type` exist for `launch.request_id`,
  // counting those a previous call with the same ID already made.
  virtual absl::Status CreateNodes(const NodeLaunch& launch) = 0;
  virtual absl::Status TerminateNodes(const std::vector<std::string>& ids) = 0;
  virtual absl::StatusOr<std::vector<ProviderNode>> ListNodes() = 0;
};

}  // namespace orb
