// Element-wise reductions over the dtypes of <orb/collective.h>, shared by the
// backends that reduce on the CPU (Gloo's algorithms and the shared-memory rounds).
#pragma once

#include <cstddef>

#include "orb/collective.h"

namespace orb::collective {

// out[i] = a[i] op b[i] for n elements; `out` may be `a` or `b`.
using ReduceFn = void (*)(void* out, const void* a, const void* b, size_t n);

ReduceFn ReduceFunction(DType dtype, ReduceOp op);

}  // namespace orb::collective
