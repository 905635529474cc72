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

template <class T>
ReduceFn ReduceFor(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return &gloo::sum<T>;
    case ReduceOp::PRODUCT: return &gloo::product<T>;
    case ReduceOp::MIN: return &gloo::min<T>;
    case ReduceOp::MAX: return &gloo::max<T>;
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
    case DType::FLOAT16: return ReduceFor<gloo::float16>(op);
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
