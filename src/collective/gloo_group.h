// The Gloo backend: CPU tensors over TCP, with Gloo's rendezvous on the GCS KV store.
// Two contexts per group, because Gloo's two APIs must never share one (that breaks its
// sockets): the older ring algorithms on `ring_` for what is small — the agreement step
// of every call and AllReduce up to kSmallBytes (about 10x faster at 1 KiB here) — and
// the newer API, with per-call timeouts, on `context_` for the rest.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "collective/collective_group.h"
#include "core/core_worker.h"

namespace gloo::rendezvous {
class Context;
}

namespace orb::collective {

class GlooGroup : public CollectiveGroup {
 public:
  // Joins: publishes this member's address under `kv_prefix` and connects to every
  // other member. Throws CollectiveError when they do not all arrive within `timeout`.
  static std::unique_ptr<GlooGroup> Connect(CoreWorker* worker, const std::string& name, int rank, int size,
                                            const std::string& kv_prefix, std::chrono::milliseconds timeout);
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
  void Agree(int op, const Tensor& tensor, int64_t root);
  template <class F>
  void Guard(const char* what, F body);

  std::string name_;
  int rank_;
  int size_;
  std::shared_ptr<gloo::rendezvous::Context> context_;  // newer API only
  std::shared_ptr<gloo::rendezvous::Context> ring_;     // older ring algorithms only
  std::chrono::milliseconds timeout_;
  std::map<int, uint64_t> p2p_sequence_;  // per peer: Send/Recv calls so far
};

}  // namespace orb::collective
