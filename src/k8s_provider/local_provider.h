// Nodes as processes on this machine: each node is `orb start --block --address GCS`
// with its type's resources and labels (one raylet; the process ends when the raylet
// does, and stops it on SIGTERM). For one machine (`orb up` with provider: local) and
// for tests of the autoscaler with real raylets.
//
// Each node is recorded in `state_dir/nodes/<id>.json` (type, kind, launch request,
// pid), so that a restarted autoscaler or `orb down` finds the nodes an earlier one
// started. A node whose process has exited is reported failed until terminated.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "k8s_provider/node_provider.h"

namespace orb {

struct LocalNodeType {
  std::map<std::string, double> resources;
  std::map<std::string, std::string> labels;
};

struct LocalProviderOptions {
  std::string cluster_name;
  std::string state_dir;   // node records and the nodes' output (logs/<id>.out)
  std::string orb_binary;  // the `orb` CLI
  std::string gcs_address;
  std::string token;  // given to the nodes as ORB_TOKEN
  std::map<std::string, LocalNodeType> node_types;
};

class LocalProvider : public NodeProvider {
 public:
  explicit LocalProvider(LocalProviderOptions options);

  absl::Status CreateNodes(const NodeLaunch& launch) override;
  absl::Status TerminateNodes(const std::vector<std::string>& ids) override;
  absl::StatusOr<std::vector<ProviderNode>> ListNodes() override;

 private:
  struct Record {
    ProviderNode node;
    int pid = 0;
  };
  std::vector<Record> ReadRecords() const;
  std::string RecordPath(const std::string& id) const;

  const LocalProviderOptions options_;
};

}  // namespace orb
