// The Gloo backend: CPU tensors over TCP, with Gloo's rendezvous on the GCS KV store.
// When every member runs on one machine, the collectives (all but Send/Recv) take a
// SharedMemoryGroup instead of sockets.
// Two contexts per group, because Gloo's two APIs must never share one (that breaks its
// sockets): the older ring algorithms on `ring_` for what is small — the agreement step
// of every call and AllReduce up to kSmallBytes (about 10x faster at 1 KiB here) — and
// the newer API, with per-call timeouts, on `context_` for the rest.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "collective/call.h"
#include "collective/collective_group.h"
#include "collective/shared_memory_group.h"
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
  void Agree(const Call& call);
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
  // The agreement step of every call, on `ring_`: agreement_in_ to agreement_out_.
  std::unique_ptr<gloo::Algorithm> agreement_;
  Call agreement_in_;
  std::vector<Call> agreement_out_;
  std::map<std::tuple<int, int, size_t>, SmallAllReduce> small_allreduce_;
  std::unique_ptr<SharedMemoryGroup> shared_memory_;  // set when every member is on this machine
  std::map<int, uint64_t> p2p_sequence_;              // per peer: Send/Recv calls so far
};

}  // namespace orb::collective
