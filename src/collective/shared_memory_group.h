// Collectives among members that share one machine, through one shared-memory segment.
//
// Each member owns two slots; calls run in rounds that alternate between them. In a
// round a member writes its Call and its part of the data into its slot, publishes a
// step in its counter, waits until every member's counter shows that step, checks that
// all Calls agree, and computes its result straight from the others' slots. A member
// reuses a slot two rounds later, once every member has written the round in between,
// so a round costs one wait. Tensors larger than a slot take several rounds. While
// members keep pace there are no system calls at all: a 1 KiB AllReduce between two
// processes takes a few microseconds where loopback TCP takes hundreds.
//
// Reductions of small rounds, or between two members, combine all slots in rank order
// on every member (the same bits everywhere). Larger rounds among more members reduce
// in parts: member p reduces part p of every slot into its own slot, takes one more
// step, and everyone copies the parts, so each member touches about three times the
// data rather than world_size + 1 times.
//
// Waiting spins briefly, then yields, then sleeps on a futex in the segment. A member
// whose process is gone, or that left (DestroyGroup), fails the others' waits at once;
// otherwise a wait fails after the group's timeout. A failed wait leaves the segment
// mid-round, so the group refuses further calls until it is destroyed and made again.
// A mismatch of Calls is seen by every member in the same round and breaks nothing.
//
// Not thread-safe: a member makes one call at a time, as collectives require anyway.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collective/call.h"
#include "collective/tensor_ops.h"
#include "orb/collective.h"

namespace orb::collective {

class SharedMemoryGroup {
 public:
  // Allgathers `mine` (the same length on every member) over another transport.
  using Exchange = std::function<std::vector<int64_t>(const std::vector<int64_t>& mine)>;

  // Called by every member together, each with its own `wanted`. Returns null on every
  // member alike unless all want it, all share a machine (same boot, same pid, IPC and
  // mount namespaces) and the segment could be made and mapped by all.
  // REQUIRES: size >= 2.
  static std::unique_ptr<SharedMemoryGroup> Connect(const std::string& name, int rank, int size, bool wanted,
                                                    std::chrono::milliseconds timeout, const Exchange& exchange);
  ~SharedMemoryGroup();  // leaves: members waiting on this one fail at once

  void AllReduce(const Tensor& tensor, ReduceOp op);
  void Broadcast(const Tensor& tensor, int root);
  void AllGather(const Tensor& in, const Tensor& out);
  void ReduceScatter(const Tensor& in, const Tensor& out, ReduceOp op);
  void Reduce(const Tensor& tensor, int root, ReduceOp op);
  void Barrier();

 private:
  SharedMemoryGroup(std::string name, int rank, int size, std::chrono::milliseconds timeout, char* base,
                    size_t bytes);
  // Runs one round: publishes `call` and `bytes` of `data` (may be none), waits for all
  // members, checks their Calls. Afterwards Slot(r) is member r's data of this round.
  void Round(const Call& call, const void* data, size_t bytes);
  const char* Slot(int rank) const;
  // Elements of a `dtype` that fit in one round.
  size_t ElementsPerRound(DType dtype) const;
  // out = slot 0 op slot 1 op ... (rank order, so every member gets the same bits), for
  // `n` elements from `skip` bytes into each slot of this round.
  void CombineSlots(ReduceFn reduce, char* out, size_t skip, size_t n) const;
  // AllReduce (root < 0) or Reduce to `root`, round by round.
  void ReduceTo(const Call& call, const Tensor& tensor, ReduceOp op, int root);
  // Finishes a step: publishes it and waits until every member has finished it too.
  void Step(const Call& call);
  // Waits until every member has finished `step`.
  void WaitForAll(uint64_t step, const Call& call);
  [[noreturn]] void Fail(const Call& call, const std::string& why);

  // Constant after construction.
  const std::string name_;
  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  char* const base_;  // the mapped segment
  const size_t bytes_;

  // Every member takes the same steps: one per round (its data written), and one more
  // in rounds that reduce in parts (its part reduced). Counters count steps.
  uint64_t step_ = 0;
  uint64_t round_ = 0;            // rounds so far; the slot used alternates with it
  uint64_t last_write_step_ = 0;  // the step that published the last round's data
  std::string broken_;   // why the group can no longer be used; empty while it can
};

}  // namespace orb::collective
