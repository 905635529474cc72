// One member's end of a collective group, behind which a backend (Gloo, NCCL) sits.
// Every call checks first that all members called the same collective on tensors of
// the same size and dtype, and fails with orb::CollectiveError otherwise; a member
// that died or a call that passes the group's timeout fails the same way.
#pragma once

#include <string>

#include "orb/collective.h"

namespace orb::collective {

size_t DTypeSize(DType dtype);
const char* DTypeName(DType dtype);

class CollectiveGroup {
 public:
  virtual ~CollectiveGroup() = default;
  virtual Backend backend() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void AllReduce(const Tensor& tensor, ReduceOp op) = 0;
  virtual void Broadcast(const Tensor& tensor, int root) = 0;
  virtual void AllGather(const Tensor& in, const Tensor& out) = 0;
  virtual void ReduceScatter(const Tensor& in, const Tensor& out, ReduceOp op) = 0;
  virtual void Reduce(const Tensor& tensor, int root, ReduceOp op) = 0;
  virtual void Send(const Tensor& tensor, int dst) = 0;
  virtual void Recv(const Tensor& tensor, int src) = 0;
  virtual void Barrier() = 0;
};

}  // namespace orb::collective
