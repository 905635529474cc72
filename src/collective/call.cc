#include "collective/call.h"

#include "collective/collective_group.h"

namespace orb::collective {

const char* KindName(int64_t kind) {
  static const char* names[] = {"?", "AllReduce", "Broadcast", "AllGather", "ReduceScatter", "Reduce", "Barrier"};
  return kind >= 0 && kind <= Call::kBarrier ? names[kind] : "?";
}

namespace {
std::string Describe(const Call& c) {
  return std::string(KindName(c.kind)) + " on " + std::to_string(c.count) + " " +
         DTypeName(static_cast<DType>(c.dtype)) + " (root " + std::to_string(c.root) + ")";
}
}  // namespace

void CheckSameCall(const std::string& group, int rank, const Call* calls, int size) {
  for (int r = 0; r < size; ++r) {
    if (calls[r] == calls[rank]) continue;
    throw CollectiveError("collective group '" + group + "': rank " + std::to_string(rank) + " called " +
                          Describe(calls[rank]) + " but rank " + std::to_string(r) + " called " + Describe(calls[r]));
  }
}

}  // namespace orb::collective
