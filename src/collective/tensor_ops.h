// Element-wise reductions over the dtypes of <orb/collective.h>, shared by the
// backends that reduce on the CPU (Gloo's algorithms and the shared-memory rounds).
#pragma once

#include <cstddef>

#include "orb/collective.h"

namespace orb::collective {

// out[i] = a[i] op b[i] for n elements; `out` may be `a` or `b`.
using ReduceFn = void (*)(void* out, const void* a, const void* b, size_t n);

ReduceFn ReduceFunction(DType dtype, ReduceOp op);

// out = part(0) op part(1) op ... op part(size - 1), `n` elements each, always in that
// order, so that every member that combines the same parts gets the same bits.
// REQUIRES: size >= 2; part(r) is a pointer to member r's elements.
template <class Part>
void CombineInRankOrder(ReduceFn reduce, void* out, int size, Part part, size_t n) {
  reduce(out, part(0), part(1), n);
  for (int r = 2; r < size; ++r) reduce(out, out, part(r), n);
}

}  // namespace orb::collective
