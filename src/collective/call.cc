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

void ThrowCallMismatch(const std::string& group, int rank, const Call& mine, int other, const Call& theirs) {
  throw CollectiveError("collective group '" + group + "': rank " + std::to_string(rank) + " called " +
                        Describe(mine) + " but rank " + std::to_string(other) + " called " + Describe(theirs));
}

}  // namespace orb::collective
