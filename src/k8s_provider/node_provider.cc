#include "k8s_provider/node_provider.h"

namespace orb {

const char* NodeKindName(NodeKind kind) { return kind == NodeKind::kHead ? "head" : "worker"; }

const char* ProviderNodeStateName(ProviderNodeState state) {
  switch (state) {
    case ProviderNodeState::kPending: return "pending";
    case ProviderNodeState::kRunning: return "running";
    case ProviderNodeState::kFailed: return "failed";
  }
  return "?";
}

}  // namespace orb
