// Fuzzes gossip delivery (src/gossip): arbitrary bytes handed to a member, as the
// GossipService would hand them over (after the cluster token was checked), must be
// taken or dropped and counted: never crash the member, overflow or run without end.
//
// Each input runs on a fresh simulated cluster (the GCS and three raylets, converged).
// Input: records (fuzz_input.h) of a target member (0: the GCS, 1-3: raylets) and the
// message bytes; after each message the network runs for 20 simulated milliseconds.
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "gossip/sim_network.h"

using namespace orb::gossip;
namespace rpc = orb::rpc;

namespace {

GossipOptions Options() {
  GossipOptions options;
  options.cluster_id = "fuzz-cluster";
  return options;
}

// A transport that keeps what it is asked to send.
class Recorder : public GossipTransport {
 public:
  void Send(const std::string&, const rpc::GossipMessage& message) override { sent.push_back(message); }
  std::vector<rpc::GossipMessage> sent;
};

// The first 40 messages a GCS and a raylet send each other (digests, entries, pings,
// acks), each as one input.
std::vector<std::string> Seeds() {
  NodeDirectory directory;
  Recorder to_gcs, to_raylet;
  int64_t now = 0;
  GossipClock clock = [&now] { return now; };
  GossipNode gcs("", "sim:0", "", Options(), &directory, &to_raylet, clock);
  GossipNode raylet(SimCluster::NodeIdOf(1), "sim:1", "sim:0", Options(), &directory, &to_gcs, clock);
  rpc::GossipNodeState state;
  state.set_address("sim:1");
  (*state.mutable_resources_total())["CPU"] = 8;
  raylet.SetLocalState(state);
  std::vector<std::string> seeds;
  for (; now < 3000 && seeds.size() < 40; now += 10) {
    gcs.Tick();
    raylet.Tick();
    for (auto* box : {&to_gcs, &to_raylet}) {
      std::vector<rpc::GossipMessage> batch;
      batch.swap(box->sent);
      for (const auto& message : batch) {
        bool for_gcs = box == &to_gcs;
        if (for_gcs) gcs.Receive(message); else raylet.Receive(message);
        seeds.push_back(orb::fuzz::MakeRecord(for_gcs ? 0 : 1, message.SerializeAsString()));
      }
    }
  }
  return seeds;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) { return orb::fuzz::WriteSeedsIfAsked(Seeds); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  orb::fuzz::RecordReader input(data, size);
  SimCluster cluster(3, Options(), SimNetworkOptions(), /*converged=*/true);
  orb::fuzz::Record record;
  for (int i = 0; i < 8 && input.Next(&record); ++i) {
    cluster.member(record.target % 4).ReceiveBytes(record.bytes);
    cluster.network().RunFor(20);
  }
  return 0;
}
