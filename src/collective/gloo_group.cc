#include "collective/gloo_group.h"

#include <gloo/algorithm.h>
#include <gloo/allgather.h>
#include <gloo/allgather_ring.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_ring.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <cstring>
#include <vector>

#include "collective/block_exchange.h"
#include "collective/gcs_kv_store.h"
#include "collective/tensor_ops.h"

namespace orb::collective {
namespace {

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

// bfloat16 travels as its bits; Gloo's algorithms only move it, ReduceFunction adds it.
struct BFloat16Bits {
  uint16_t bits;
};

// Calls f(T{}) with T the C++ type of `dtype`.
template <class F>
void WithType(DType dtype, F f) {
  switch (dtype) {
    case DType::FLOAT32: return f(float{});
    case DType::FLOAT64: return f(double{});
    case DType::FLOAT16: return f(gloo::float16{});
    case DType::BFLOAT16: return f(BFloat16Bits{});
    case DType::INT32: return f(int32_t{});
    case DType::INT64: return f(int64_t{});
    case DType::UINT8: return f(uint8_t{});
  }
}

}  // namespace

std::unique_ptr<GlooGroup> GlooGroup::Connect(CoreWorker* worker, const std::string& name, int rank, int size,
                                              const std::string& kv_prefix, const GlooOptions& options) {
  std::unique_ptr<GlooGroup> group;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = worker->node_ip();
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(options.timeout);
    GcsKvStore store(worker, kv_prefix, options.timeout);
    context->connectFullMesh(store, device);
    auto ring = std::make_shared<gloo::rendezvous::Context>(rank, size);
    ring->setTimeout(options.timeout);
    GcsKvStore ring_store(worker, kv_prefix + "ring/", options.timeout);
    ring->connectFullMesh(ring_store, device);
    group.reset(new GlooGroup(name, rank, size, std::move(context), std::move(ring), options.timeout));
    if (size > 1) {
      auto exchange = [&](const std::vector<int64_t>& mine) {
        std::vector<int64_t> all(mine.size() * static_cast<size_t>(size));
        gloo::AllgatherRing<int64_t> allgather(group->ring_, {const_cast<int64_t*>(mine.data())}, all.data(),
                                               static_cast<int>(mine.size()));
        allgather.run();
        return all;
      };
      group->shared_memory_ = SharedMemoryGroup::Connect(
          name, rank, size, options.local_transport == LocalTransport::kSharedMemory, options.timeout, exchange);
    }
  } catch (const std::exception& e) {
    throw CollectiveError("cannot join collective group '" + name + "' as rank " + std::to_string(rank) + " of " +
                          std::to_string(size) + ": " + e.what());
  }
  return group;
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

void GlooGroup::Agree(const Call& call, const void* inline_data, size_t bytes) {
  constexpr size_t kBlockBytes = sizeof(Call) + kInlineBytes;
  agreement_in_.resize(kBlockBytes);
  std::memcpy(agreement_in_.data(), &call, sizeof(call));
  if (bytes > 0) std::memcpy(agreement_in_.data() + sizeof(Call), inline_data, bytes);
  if (size_ == 1) {  // nobody to disagree with
    agreed_ = agreement_in_.data();
    return;
  }
  if (!agreement_) agreement_ = std::make_unique<BlockExchange>(ring_, kBlockBytes);
  Guard(KindName(call.kind), [&] { agreed_ = agreement_->Run(agreement_in_.data()); });
  CheckSameCall(name_, rank_, size_, [this](int r) { return AgreedBlock(r); });
}

const char* GlooGroup::AgreedBlock(int rank) const {
  return agreed_ + (sizeof(Call) + kInlineBytes) * static_cast<size_t>(rank);
}

void GlooGroup::CombineAgreed(ReduceFn reduce, void* out, size_t skip, size_t n) const {
  CombineInRankOrder(reduce, out, size_, [&](int r) { return AgreedBlock(r) + sizeof(Call) + skip; }, n);
}

void GlooGroup::AllReduce(const Tensor& t, ReduceOp op) {
  if (shared_memory_) return shared_memory_->AllReduce(t, op);
  size_t bytes = t.count * DTypeSize(t.dtype);
  if (bytes <= kInlineBytes) {
    // The data rides with the agreement; every member reduces the blocks in rank order.
    Agree(Call::Of(Call::kAllReduce, t), t.data, bytes);
    if (size_ == 1 || bytes == 0) return;  // a group of one: the values are already the result
    CombineAgreed(ReduceFunction(t.dtype, op), t.data, 0, t.count);
    return;
  }
  Agree(Call::Of(Call::kAllReduce, t));
  // Every rank agreed on the size above, so every rank takes the same branch.
  if (size_ == 1) return;
  bool small = bytes <= kSmallBytes && t.dtype != DType::BFLOAT16;
  Guard("AllReduce", [&] {
    WithType(t.dtype, [&](auto zero) {
      using T = decltype(zero);
      if constexpr (!std::is_same_v<T, BFloat16Bits>) {
        if (small) {
          SmallAllReduce& ring = SmallAllReduceFor<T>(t, op);
          std::memcpy(ring.staging.data(), t.data, bytes);
          ring.algorithm->run();
          std::memcpy(t.data, ring.staging.data(), bytes);
          return;
        }
      }
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(static_cast<T*>(t.data), t.count);
      opts.setReduceFunction(ReduceFunction(t.dtype, op));
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
  });
}

// Every member asks for the same shapes in the same order, so every member builds (and
// drops) the same algorithms at the same point: their slots line up.
template <class T>
GlooGroup::SmallAllReduce& GlooGroup::SmallAllReduceFor(const Tensor& t, ReduceOp op) {
  auto key = std::make_tuple(static_cast<int>(t.dtype), static_cast<int>(op), t.count);
  auto it = small_allreduce_.find(key);
  if (it != small_allreduce_.end()) return it->second;
  if (small_allreduce_.size() >= kSmallAllReduceShapes) small_allreduce_.clear();
  SmallAllReduce& made = small_allreduce_[key];
  made.staging.resize(t.count * sizeof(T));
  made.algorithm = std::make_unique<gloo::AllreduceRing<T>>(
      ring_, std::vector<T*>{reinterpret_cast<T*>(made.staging.data())}, static_cast<int>(t.count),
      RingReduceFor<T>(op));
  return made;
}

void GlooGroup::Broadcast(const Tensor& t, int root) {
  if (shared_memory_) return shared_memory_->Broadcast(t, root);
  size_t bytes = t.count * DTypeSize(t.dtype);
  if (bytes <= kInlineBytes) {  // the root's data rides with the agreement
    bool sending = rank_ == root;
    Agree(Call::Of(Call::kBroadcast, t, root), sending ? t.data : nullptr, sending ? bytes : 0);
    if (!sending && bytes > 0) std::memcpy(t.data, AgreedBlock(root) + sizeof(Call), bytes);
    return;
  }
  Agree(Call::Of(Call::kBroadcast, t, root));
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
  if (shared_memory_) return shared_memory_->AllGather(in, out);
  size_t bytes = in.count * DTypeSize(in.dtype);
  if (bytes <= kInlineBytes) {  // everyone's data rides with the agreement
    Agree(Call::Of(Call::kAllGather, in), in.data, bytes);
    for (int r = 0; r < size_ && bytes > 0; ++r) {
      std::memcpy(static_cast<char*>(out.data) + bytes * static_cast<size_t>(r), AgreedBlock(r) + sizeof(Call), bytes);
    }
    return;
  }
  Agree(Call::Of(Call::kAllGather, in));
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
  if (shared_memory_) return shared_memory_->ReduceScatter(in, out, op);
  size_t in_bytes = in.count * DTypeSize(in.dtype);
  if (in_bytes <= kInlineBytes) {  // everyone's data rides with the agreement
    Agree(Call::Of(Call::kReduceScatter, in), in.data, in_bytes);
    size_t slice = out.count * DTypeSize(out.dtype);
    if (size_ == 1) {
      std::memcpy(out.data, in.data, slice);
    } else if (slice > 0) {
      CombineAgreed(ReduceFunction(in.dtype, op), out.data, slice * static_cast<size_t>(rank_), out.count);
    }
    return;
  }
  Agree(Call::Of(Call::kReduceScatter, in));
  // An allreduce of a copy, then this rank's slice: simple, correct, and twice the
  // traffic of a true reduce-scatter (Gloo's new API has none).
  std::vector<char> reduced(static_cast<const char*>(in.data),
                            static_cast<const char*>(in.data) + in.count * DTypeSize(in.dtype));
  Guard("ReduceScatter", [&] {
    WithType(in.dtype, [&](auto zero) {
      using T = decltype(zero);
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(reinterpret_cast<T*>(reduced.data()), in.count);
      opts.setReduceFunction(ReduceFunction(in.dtype, op));
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
  });
  size_t bytes = out.count * DTypeSize(out.dtype);
  std::memcpy(out.data, reduced.data() + static_cast<size_t>(rank_) * bytes, bytes);
}

void GlooGroup::Reduce(const Tensor& t, int root, ReduceOp op) {
  if (shared_memory_) return shared_memory_->Reduce(t, root, op);
  size_t bytes = t.count * DTypeSize(t.dtype);
  if (bytes <= kInlineBytes) {  // everyone's data rides with the agreement
    Agree(Call::Of(Call::kReduce, t, root), t.data, bytes);
    if (size_ > 1 && rank_ == root && bytes > 0) CombineAgreed(ReduceFunction(t.dtype, op), t.data, 0, t.count);
    return;
  }
  Agree(Call::Of(Call::kReduce, t, root));
  Guard("Reduce", [&] {
    WithType(t.dtype, [&](auto zero) {
      using T = decltype(zero);
      gloo::ReduceOptions opts(context_);
      opts.setOutput(static_cast<T*>(t.data), t.count);
      opts.setRoot(root);
      opts.setReduceFunction(ReduceFunction(t.dtype, op));
      opts.setTimeout(timeout_);
      gloo::reduce(opts);
    });
  });
}

void GlooGroup::Barrier() {
  if (shared_memory_) return shared_memory_->Barrier();
  // Nobody finishes the agreement before everyone has started it: that is a barrier.
  Agree(Call::Of(Call::kBarrier, Tensor{}));
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
