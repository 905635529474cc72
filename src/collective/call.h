// What a member is about to do in a collective: which call, on how many elements of
// which dtype, with which root. Every member of a group must make the same call, so
// backends exchange their Calls before (or along with) the data and fail on any
// difference, on every member alike.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "orb/collective.h"

namespace orb::collective {

struct Call {
  enum Kind : int64_t { kAllReduce = 1, kBroadcast, kAllGather, kReduceScatter, kReduce, kBarrier };
  int64_t kind = 0;
  int64_t dtype = 0;
  int64_t count = 0;
  int64_t root = -1;

  static Call Of(Kind kind, const Tensor& tensor, int64_t root = -1) {
    return {kind, static_cast<int64_t>(tensor.dtype), static_cast<int64_t>(tensor.count), root};
  }
  bool operator==(const Call& o) const {
    return kind == o.kind && dtype == o.dtype && count == o.count && root == o.root;
  }
};
static_assert(sizeof(Call) == 4 * sizeof(int64_t), "Calls travel as four int64s");

const char* KindName(int64_t kind);

// Throws CollectiveError: member `rank` called `mine`, member `other` called `theirs`.
[[noreturn]] void ThrowCallMismatch(const std::string& group, int rank, const Call& mine, int other,
                                    const Call& theirs);

// Throws (ThrowCallMismatch) at the first member whose Call differs from member
// `rank`'s. `call_at(r)` points at member r's Call as it travelled (any alignment).
template <class CallAt>
void CheckSameCall(const std::string& group, int rank, int size, CallAt call_at) {
  Call mine, theirs;
  std::memcpy(&mine, call_at(rank), sizeof(Call));
  for (int r = 0; r < size; ++r) {
    std::memcpy(&theirs, call_at(r), sizeof(Call));
    if (!(theirs == mine)) ThrowCallMismatch(group, rank, mine, r, theirs);
  }
}

}  // namespace orb::collective
