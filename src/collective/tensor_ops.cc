#include "collective/tensor_ops.h"

#include <gloo/math.h>
#include <gloo/types.h>

#include <cstdint>
#include <cstring>
#include <functional>

#include "collective/collective_group.h"

namespace orb::collective {
namespace {

// bfloat16: the top half of a float32.
struct BFloat16 {
  uint16_t bits;
};
float ToFloat(BFloat16 v) {
  uint32_t u = static_cast<uint32_t>(v.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
BFloat16 FromFloat(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
  return BFloat16{static_cast<uint16_t>(u >> 16)};
}
template <class Op>
void ReduceBFloat16(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<BFloat16*>(c);
  auto* x = static_cast<const BFloat16*>(a);
  auto* y = static_cast<const BFloat16*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = FromFloat(Op()(ToFloat(x[i]), ToFloat(y[i])));
}
struct Min {
  float operator()(float a, float b) const { return a < b ? a : b; }
};
struct Max {
  float operator()(float a, float b) const { return a > b ? a : b; }
};

struct Sum {
  template <class T>
  T operator()(T a, T b) const { return a + b; }
};
struct Product {
  template <class T>
  T operator()(T a, T b) const { return a * b; }
};
struct Minimum {
  template <class T>
  T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Maximum {
  template <class T>
  T operator()(T a, T b) const { return a < b ? b : a; }
};

// Element-wise out = a op b, written so that the compiler vectorizes it: three cases
// (out is a, out is b, all distinct) whose pointers cannot alias.
template <class T, class Op>
void Combine(void* c, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(c);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  Op op;
  if (out == x) {
    T* __restrict o = out;
    const T* __restrict v = y;
    for (size_t i = 0; i < n; ++i) o[i] = op(o[i], v[i]);
  } else if (out == y) {
    T* __restrict o = out;
    const T* __restrict u = x;
    for (size_t i = 0; i < n; ++i) o[i] = op(u[i], o[i]);
  } else {
    T* __restrict o = out;
    const T* __restrict u = x;
    const T* __restrict v = y;
    for (size_t i = 0; i < n; ++i) o[i] = op(u[i], v[i]);
  }
}

template <class T>
ReduceFn ReduceFor(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return &Combine<T, Sum>;
    case ReduceOp::PRODUCT: return &Combine<T, Product>;
    case ReduceOp::MIN: return &Combine<T, Minimum>;
    case ReduceOp::MAX: return &Combine<T, Maximum>;
  }
  return nullptr;
}

// float16 through Gloo's type, which computes in float32.
ReduceFn Float16ReduceFor(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return &gloo::sum<gloo::float16>;
    case ReduceOp::PRODUCT: return &gloo::product<gloo::float16>;
    case ReduceOp::MIN: return &gloo::min<gloo::float16>;
    case ReduceOp::MAX: return &gloo::max<gloo::float16>;
  }
  return nullptr;
}

ReduceFn BFloat16ReduceFor(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return &ReduceBFloat16<std::plus<float>>;
    case ReduceOp::PRODUCT: return &ReduceBFloat16<std::multiplies<float>>;
    case ReduceOp::MIN: return &ReduceBFloat16<Min>;
    case ReduceOp::MAX: return &ReduceBFloat16<Max>;
  }
  return nullptr;
}

}  // namespace

ReduceFn ReduceFunction(DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::FLOAT32: return ReduceFor<float>(op);
    case DType::FLOAT64: return ReduceFor<double>(op);
    case DType::FLOAT16: return Float16ReduceFor(op);
    case DType::BFLOAT16: return BFloat16ReduceFor(op);
    case DType::INT32: return ReduceFor<int32_t>(op);
    case DType::INT64: return ReduceFor<int64_t>(op);
    case DType::UINT8: return ReduceFor<uint8_t>(op);
  }
  return nullptr;
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::FLOAT32: case DType::INT32: return 4;
    case DType::FLOAT64: case DType::INT64: return 8;
    case DType::FLOAT16: case DType::BFLOAT16: return 2;
    case DType::UINT8: return 1;
  }
  return 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::FLOAT32: return "float32";
    case DType::FLOAT64: return "float64";
    case DType::FLOAT16: return "float16";
    case DType::BFLOAT16: return "bfloat16";
    case DType::INT32: return "int32";
    case DType::INT64: return "int64";
    case DType::UINT8: return "uint8";
  }
  return "?";
}

}  // namespace orb::collective
