// The NCCL backend: CUDA tensors, with NCCL's unique ID exchanged through the GCS KV
// store. Built, where CUDA and NCCL are found, as the plugin liborb_nccl.so, which
// liborb loads on the first NCCL group (see LoadNcclBackend). The communicator is
// made on the first collective, on the device of its tensor; every call runs on the
// group's stream and is waited for with the group's timeout, after which the
// communicator is aborted and the call fails with CollectiveError.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "collective/collective_group.h"
#include "core/core_worker.h"

namespace orb::collective {

class NcclGroup : public CollectiveGroup {
 public:
  static std::unique_ptr<NcclGroup> Connect(CoreWorker* worker, const std::string& name, int rank, int size,
                                            const std::string& kv_prefix, std::chrono::milliseconds timeout);
  ~NcclGroup() override;

  Backend backend() const override { return Backend::NCCL; }
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
  struct State;
  NcclGroup(std::string name, int rank, int size, std::string unique_id, std::chrono::milliseconds timeout);
  // Makes the communicator on `device` if needed; throws CollectiveError.
  void Ready(int device);
  // Waits for the stream with the timeout; aborts the communicator on failure.
  void Finish(const char* what);

  std::string name_;
  int rank_;
  int size_;
  std::string unique_id_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<State> state_;
};

}  // namespace orb::collective
