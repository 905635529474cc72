#include "collective/gloo_group.h"

#include <gloo/allgather.h>
#include <gloo/allgather_ring.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <cstring>
#include <vector>

#include "collective/gcs_kv_store.h"

namespace orb::collective {
namespace {

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

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
  if constexpr (std::is_same_v<T, BFloat16>) {
    switch (op) {
      case ReduceOp::SUM: return &ReduceBFloat16<std::plus<float>>;
      case ReduceOp::PRODUCT: return &ReduceBFloat16<std::multiplies<float>>;
      case ReduceOp::MIN: return &ReduceBFloat16<Min>;
      case ReduceOp::MAX: return &ReduceBFloat16<Max>;
    }
  } else {
    switch (op) {
      case ReduceOp::SUM: return &gloo::sum<T>;
      case ReduceOp::PRODUCT: return &gloo::product<T>;
      case ReduceOp::MIN: return &gloo::min<T>;
      case ReduceOp::MAX: return &gloo::max<T>;
    }
  }
  return nullptr;
}

// Calls f(T{}) with T the C++ type of `dtype`.
template <class F>
void WithType(DType dtype, F f) {
  switch (dtype) {
    case DType::FLOAT32: return f(float{});
    case DType::FLOAT64: return f(double{});
    case DType::FLOAT16: return f(gloo::float16{});
    case DType::BFLOAT16: return f(BFloat16{});
    case DType::INT32: return f(int32_t{});
    case DType::INT64: return f(int64_t{});
    case DType::UINT8: return f(uint8_t{});
  }
}

// AllReduce of at most this many bytes runs Gloo's older ring algorithm.
constexpr size_t kSmallBytes = 64 << 10;

template <class T>
const gloo::ReductionFunction<T>* RingReduceFor(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return gloo::ReductionFunction<T>::sum;
    case ReduceOp::PRODUCT: return gloo::ReductionFunction<T>::product;
    case ReduceOp::MIN: return gloo::ReductionFunction<T>::min;
    case ReduceOp::MAX: return gloo::ReductionFunction<T>::max;
  }
  return gloo::ReductionFunction<T>::sum;
}

enum OpCode { kAllReduce = 1, kBroadcast, kAllGather, kReduceScatter, kReduce, kBarrier };
const char* OpName(int op) {
  static const char* names[] = {"?", "AllReduce", "Broadcast", "AllGather", "ReduceScatter", "Reduce", "Barrier"};
  return op >= 0 && op <= kBarrier ? names[op] : "?";
}

}  // namespace

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

std::unique_ptr<GlooGroup> GlooGroup::Connect(CoreWorker* worker, const std::string& name, int rank, int size,
                                              const std::string& kv_prefix, std::chrono::milliseconds timeout) {
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = worker->node_ip();
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    GcsKvStore store(worker, kv_prefix, timeout);
    context->connectFullMesh(store, device);
    auto ring = std::make_shared<gloo::rendezvous::Context>(rank, size);
    ring->setTimeout(timeout);
    GcsKvStore ring_store(worker, kv_prefix + "ring/", timeout);
    ring->connectFullMesh(ring_store, device);
    return std::unique_ptr<GlooGroup>(new GlooGroup(name, rank, size, std::move(context), std::move(ring), timeout));
  } catch (const std::exception& e) {
    throw CollectiveError("cannot join collective group '" + name + "' as rank " + std::to_string(rank) + " of " +
                          std::to_string(size) + ": " + e.what());
  }
}

GlooGroup::GlooGroup(std::string name, int rank, int size, std::shared_ptr<gloo::rendezvous::Context> context,
                     std::shared_ptr<gloo::rendezvous::Context> ring, std::chrono::milliseconds timeout)
    : name_(std::move(name)),
      rank_(rank),
      size_(size),
      context_(std::move(context)),
      ring_(std::move(ring)),
      timeout_(timeout) {}

GlooGroup::~GlooGroup() = default;

template <class F>
void GlooGroup::Guard(const char* what, F body) {
  try {
    body();
  } catch (const CollectiveError&) {
    throw;
  } catch (const std::exception& e) {
    throw CollectiveError(std::string(what) + " on collective group '" + name_ + "' failed: " + e.what() +
                          " (a member died, or did not make the same call within " +
                          std::to_string(timeout_.count()) + " ms)");
  }
}

void GlooGroup::Agree(int op, const Tensor& tensor, int64_t root) {
  if (size_ == 1) return;  // nobody to disagree with (and ring algorithms need a peer)
  int64_t mine[4] = {op, static_cast<int64_t>(tensor.dtype), static_cast<int64_t>(tensor.count), root};
  std::vector<int64_t> all(4 * static_cast<size_t>(size_));
  Guard(OpName(op), [&] {
    gloo::AllgatherRing<int64_t> exchange(ring_, {mine}, all.data(), 4);
    exchange.run();
  });
  for (int r = 0; r < size_; ++r) {
    const int64_t* theirs = &all[4 * static_cast<size_t>(r)];
    if (std::equal(theirs, theirs + 4, mine)) continue;
    throw CollectiveError("collective group '" + name_ + "': rank " + std::to_string(rank_) + " called " +
                          OpName(op) + " on " + std::to_string(tensor.count) + " " + DTypeName(tensor.dtype) +
                          " (root " + std::to_string(root) + ") but rank " + std::to_string(r) + " called " +
                          OpName(static_cast<int>(theirs[0])) + " on " + std::to_string(theirs[2]) + " " +
                          DTypeName(static_cast<DType>(theirs[1])) + " (root " + std::to_string(theirs[3]) + ")");
  }
}

void GlooGroup::AllReduce(const Tensor& t, ReduceOp op) {
  Agree(kAllReduce, t, -1);
  // Every rank agreed on the size above, so every rank takes the same branch.
  if (size_ == 1) return;  // a group of one: the values are already the result
  bool small = t.count * DTypeSize(t.dtype) <= kSmallBytes && t.dtype != DType::BFLOAT16;
  Guard("AllReduce", [&] {
    WithType(t.dtype, [&](auto zero) {
      using T = decltype(zero);
      if constexpr (!std::is_same_v<T, BFloat16>) {
        if (small) {
          gloo::AllreduceRing<T> ring(ring_, {static_cast<T*>(t.data)}, static_cast<int>(t.count),
                                      RingReduceFor<T>(op));
          ring.run();
          return;
        }
      }
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(static_cast<T*>(t.data), t.count);
      opts.setReduceFunction(ReduceFor<T>(op));
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
  });
}

void GlooGroup::Broadcast(const Tensor& t, int root) {
  Agree(kBroadcast, t, root);
  Guard("Broadcast", [&] {
    WithType(t.dtype, [&](auto zero) {
      using T = decltype(zero);
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(static_cast<T*>(t.data), t.count);
      opts.setRoot(root);
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
    });
  });
}

void GlooGroup::AllGather(const Tensor& in, const Tensor& out) {
  Agree(kAllGather, in, -1);
  Guard("AllGather", [&] {
    WithType(in.dtype, [&](auto zero) {
      using T = decltype(zero);
      gloo::AllgatherOptions opts(context_);
      opts.setInput(static_cast<T*>(in.data), in.count);
      opts.setOutput(static_cast<T*>(out.data), out.count);
      opts.setTimeout(timeout_);
      gloo::allgather(opts);
    });
  });
}

void GlooGroup::ReduceScatter(const Tensor& in, const Tensor& out, ReduceOp op) {
  Agree(kReduceScatter, in, -1);
  // An allreduce of a copy, then this rank's slice: simple, correct, and twice the
  // traffic of a true reduce-scatter (Gloo's new API has none).
  std::vector<char> reduced(static_cast<const char*>(in.data),
                            static_cast<const char*>(in.data) + in.count * DTypeSize(in.dtype));
  Guard("ReduceScatter", [&] {
    WithType(in.dtype, [&](auto zero) {
      using T = decltype(zero);
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(reinterpret_cast<T*>(reduced.data()), in.count);
      opts.setReduceFunction(ReduceFor<T>(op));
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
  });
  size_t bytes = out.count * DTypeSize(out.dtype);
  std::memcpy(out.data, reduced.data() + static_cast<size_t>(rank_) * bytes, bytes);
}

void GlooGroup::Reduce(const Tensor& t, int root, ReduceOp op) {
  Agree(kReduce, t, root);
  Guard("Reduce", [&] {
    WithType(t.dtype, [&](auto zero) {
      using T = decltype(zero);
      gloo::ReduceOptions opts(context_);
      opts.setOutput(static_cast<T*>(t.data), t.count);
      opts.setRoot(root);
      opts.setReduceFunction(ReduceFor<T>(op));
      opts.setTimeout(timeout_);
      gloo::reduce(opts);
    });
  });
}

void GlooGroup::Barrier() {
  Agree(kBarrier, Tensor{}, -1);
  Guard("Barrier", [&] {
    gloo::BarrierOptions opts(context_);
    opts.setTimeout(timeout_);
    gloo::barrier(opts);
  });
}

// Point to point: a 16-byte header (dtype, count) first, so that a receiver expecting
// another size or dtype fails clearly instead of reading garbage.
void GlooGroup::Send(const Tensor& t, int dst) {
  uint64_t slot = (static_cast<uint64_t>(0x5e) << 56) | (p2p_sequence_[dst]++ << 1);
  int64_t header[2] = {static_cast<int64_t>(t.dtype), static_cast<int64_t>(t.count)};
  Guard("Send", [&] {
    auto head = context_->createUnboundBuffer(header, sizeof(header));
    head->send(dst, slot);
    head->waitSend(timeout_);
    auto body = context_->createUnboundBuffer(t.data, t.count * DTypeSize(t.dtype));
    body->send(dst, slot | 1);
    body->waitSend(timeout_);
  });
}

void GlooGroup::Recv(const Tensor& t, int src) {
  uint64_t slot = (static_cast<uint64_t>(0x5e) << 56) | (p2p_sequence_[src]++ << 1);
  int64_t header[2] = {0, 0};
  Guard("Recv", [&] {
    auto head = context_->createUnboundBuffer(header, sizeof(header));
    head->recv(src, slot);
    head->waitRecv(timeout_);
  });
  if (header[0] != static_cast<int64_t>(t.dtype) || header[1] != static_cast<int64_t>(t.count)) {
    throw CollectiveError("collective group '" + name_ + "': rank " + std::to_string(src) + " sent " +
                          std::to_string(header[1]) + " " + DTypeName(static_cast<DType>(header[0])) + " but rank " +
                          std::to_string(rank_) + " expected " + std::to_string(t.count) + " " + DTypeName(t.dtype));
  }
  Guard("Recv", [&] {
    auto body = context_->createUnboundBuffer(t.data, t.count * DTypeSize(t.dtype));
    body->recv(src, slot | 1);
    body->waitRecv(timeout_);
  });
}

}  // namespace orb::collective
