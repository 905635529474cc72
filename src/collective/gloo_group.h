// The Gloo backend: CPU tensors, with Gloo's rendezvous on the GCS KV store.
//
// When every member runs on one machine, the collectives (all but Send/Recv) go through
// a SharedMemoryGroup. Otherwise they go over TCP on two contexts, because Gloo's two
// APIs must never share one (that breaks its sockets):
//   - `ring_`, Gloo's older API, built once and run again: the agreement step of every
//     call (a BlockExchange of each member's Call plus up to kInlineBytes of data, so
//     an AllReduce that small is this one step and a local reduction), and the ring
//     AllReduce up to kSmallBytes;
//   - `context_`, the newer API with per-call timeouts, for the rest.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "collective/block_exchange.h"
#include "collective/call.h"
#include "collective/collective_group.h"
#include "collective/shared_memory_group.h"
#include "collective/tensor_ops.h"
#include "core/core_worker.h"

namespace gloo {
class Algorithm;
namespace rendezvous {
class Context;
}
}  // namespace gloo

namespace orb::collective {

// How members on one machine talk.
enum class LocalTransport {
  kSharedMemory,  // through a shared-memory segment when every member is on this machine
  kTcp,           // over loopback TCP, as across machines
};

struct GlooOptions {
  // How long a collective (and joining) may wait for the other members.
  std::chrono::milliseconds timeout = kDefaultTimeout;
  // Used only when every member asks for it.
  LocalTransport local_transport = LocalTransport::kSharedMemory;
};

class GlooGroup : public CollectiveGroup {
 public:
  // Joins: publishes this member's address under `kv_prefix` and connects to every
  // other member. Throws CollectiveError when they do not all arrive within `timeout`.
  static std::unique_ptr<GlooGroup> Connect(CoreWorker* worker, const std::string& name, int rank, int size,
                                            const std::string& kv_prefix, const GlooOptions& options);
  ~GlooGroup() override;

  Backend backend() const override { return Backend::GLOO; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void AllReduce(const Tensor& tensor, ReduceOp op) override;
  void Broadcast(const Tensor& tensor, int root) override;
  void AllGather(const Tensor& in, const Tensor& out) override;
  void ReduceScatter(const Tensor& in, const Tensor& out, ReduceOp op) override;
  void Reduce(const Tensor& tensor, int root, ReduceOp op) override;
  void Send(const Tensor& tensor, int dst) override;
  void Recv(const Tensor& tensor, int src) override;
  void Barrier() override;

 private:
  GlooGroup(std::string name, int rank, int size, std::shared_ptr<gloo::rendezvous::Context> context,
            std::shared_ptr<gloo::rendezvous::Context> ring, std::chrono::milliseconds timeout);
  // Every member states what it is about to do; any difference is an error on all.
  // Every member states its Call, along with up to kInlineBytes of data; any difference
  // in Calls is an error on all. Afterwards AgreedBlock(r) is rank r's Call and data.
  void Agree(const Call& call, const void* inline_data = nullptr, size_t bytes = 0);
  const char* AgreedBlock(int rank) const;
  // out = the members' inline data (from `skip` bytes on) combined in rank order.
  void CombineAgreed(ReduceFn reduce, void* out, size_t skip, size_t n) const;
  static constexpr size_t kInlineBytes = 1 << 10;
  template <class F>
  void Guard(const char* what, F body);
  // An older-API ring AllReduce built once per (dtype, op, count) and run again: building
  // one costs round trips to the peers. It reduces `staging` in place.
  struct SmallAllReduce {
    std::unique_ptr<gloo::Algorithm> algorithm;
    std::vector<char> staging;
  };
  static constexpr size_t kSmallAllReduceShapes = 16;  // beyond that, start over
  template <class T>
  SmallAllReduce& SmallAllReduceFor(const Tensor& tensor, ReduceOp op);

  std::string name_;
  int rank_;
  int size_;
  std::shared_ptr<gloo::rendezvous::Context> context_;  // newer API only
  std::shared_ptr<gloo::rendezvous::Context> ring_;     // older ring algorithms only
  std::chrono::milliseconds timeout_;
  // The agreement step of every call, on `ring_`: one fixed-size block per member (a
  // Call, then inline data); agreement_in_ is this member's, agreed_ all of them.
  std::unique_ptr<BlockExchange> agreement_;
  std::vector<char> agreement_in_;
  const char* agreed_ = nullptr;
  std::map<std::tuple<int, int, size_t>, SmallAllReduce> small_allreduce_;
  std::unique_ptr<SharedMemoryGroup> shared_memory_;  // set when every member is on this machine
  std::map<int, uint64_t> p2p_sequence_;              // per peer: Send/Recv calls so far
};

}  // namespace orb::collective
