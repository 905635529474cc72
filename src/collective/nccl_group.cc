#include "collective/nccl_group.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <optional>
#include <thread>

#include "collective/gcs_kv_store.h"

namespace orb::collective {
namespace {

ncclDataType_t ToNccl(DType dtype) {
  switch (dtype) {
    case DType::FLOAT32: return ncclFloat32;
    case DType::FLOAT64: return ncclFloat64;
    case DType::FLOAT16: return ncclFloat16;
    case DType::BFLOAT16: return ncclBfloat16;
    case DType::INT32: return ncclInt32;
    case DType::INT64: return ncclInt64;
    case DType::UINT8: return ncclUint8;
  }
  return ncclFloat32;
}

ncclRedOp_t ToNccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return ncclSum;
    case ReduceOp::PRODUCT: return ncclProd;
    case ReduceOp::MIN: return ncclMin;
    case ReduceOp::MAX: return ncclMax;
  }
  return ncclSum;
}

}  // namespace

struct NcclGroup::State {
  int device = -1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int* scratch = nullptr;  // one int on the device, for Barrier
};

std::unique_ptr<NcclGroup> NcclGroup::Connect(CoreWorker* worker, const std::string& name, int rank, int size,
                                              const std::string& kv_prefix, std::chrono::milliseconds timeout) {
  std::string key = kv_prefix + "nccl_unique_id";
  if (rank == 0) {
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess) throw CollectiveError("group '" + name + "': ncclGetUniqueId failed");
    worker->KvPut(kKvNamespace, key, std::string(id.internal, sizeof(id.internal)));
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::optional<std::string> id;
  while (!(id = worker->KvGet(kKvNamespace, key))) {
    if (std::chrono::steady_clock::now() >= deadline) {
      throw CollectiveError("group '" + name + "': rank 0 did not publish the NCCL unique ID within the timeout");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::unique_ptr<NcclGroup>(new NcclGroup(name, rank, size, *id, timeout));
}

NcclGroup::NcclGroup(std::string name, int rank, int size, std::string unique_id, std::chrono::milliseconds timeout)
    : name_(std::move(name)),
      rank_(rank),
      size_(size),
      unique_id_(std::move(unique_id)),
      timeout_(timeout),
      state_(std::make_unique<State>()) {}

NcclGroup::~NcclGroup() {
  if (state_->comm) ncclCommDestroy(state_->comm);
  if (state_->stream) cudaStreamDestroy(state_->stream);
  if (state_->scratch) cudaFree(state_->scratch);
}

void NcclGroup::Ready(int device) {
  if (device < 0) throw CollectiveError("group '" + name_ + "' uses NCCL: tensors must be on a CUDA device");
  if (state_->comm) {
    if (device != state_->device) {
      throw CollectiveError("group '" + name_ + "' runs on CUDA device " + std::to_string(state_->device) +
                            ", not " + std::to_string(device));
    }
    cudaSetDevice(device);
    return;
  }
  if (cudaSetDevice(device) != cudaSuccess || cudaStreamCreate(&state_->stream) != cudaSuccess ||
      cudaMalloc(&state_->scratch, sizeof(int)) != cudaSuccess) {
    throw CollectiveError("group '" + name_ + "': cannot use CUDA device " + std::to_string(device));
  }
  ncclUniqueId id;
  std::memcpy(id.internal, unique_id_.data(), std::min(unique_id_.size(), sizeof(id.internal)));
  ncclResult_t r = ncclCommInitRank(&state_->comm, size_, id, rank_);
  if (r != ncclSuccess) {
    throw CollectiveError("group '" + name_ + "': ncclCommInitRank failed: " + ncclGetErrorString(r));
  }
  state_->device = device;
}

void NcclGroup::Finish(const char* what) {
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (true) {
    cudaError_t done = cudaStreamQuery(state_->stream);
    if (done == cudaSuccess) return;
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(state_->comm, &async);
    bool failed = (done != cudaErrorNotReady) || async != ncclSuccess;
    if (failed || std::chrono::steady_clock::now() >= deadline) {
      ncclCommAbort(state_->comm);
      state_->comm = nullptr;
      throw CollectiveError(std::string(what) + " on collective group '" + name_ + "' failed: " +
                            (async != ncclSuccess ? ncclGetErrorString(async)
                             : failed             ? cudaGetErrorString(done)
                                                  : "timed out") +
                            " (a member died, or did not make the same call within " +
                            std::to_string(timeout_.count()) + " ms)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void NcclGroup::AllReduce(const Tensor& t, ReduceOp op) {
  Ready(t.device);
  ncclAllReduce(t.data, t.data, t.count, ToNccl(t.dtype), ToNccl(op), state_->comm, state_->stream);
  Finish("AllReduce");
}

void NcclGroup::Broadcast(const Tensor& t, int root) {
  Ready(t.device);
  ncclBroadcast(t.data, t.data, t.count, ToNccl(t.dtype), root, state_->comm, state_->stream);
  Finish("Broadcast");
}

void NcclGroup::AllGather(const Tensor& in, const Tensor& out) {
  Ready(in.device);
  ncclAllGather(in.data, out.data, in.count, ToNccl(in.dtype), state_->comm, state_->stream);
  Finish("AllGather");
}

void NcclGroup::ReduceScatter(const Tensor& in, const Tensor& out, ReduceOp op) {
  Ready(in.device);
  ncclReduceScatter(in.data, out.data, out.count, ToNccl(in.dtype), ToNccl(op), state_->comm, state_->stream);
  Finish("ReduceScatter");
}

void NcclGroup::Reduce(const Tensor& t, int root, ReduceOp op) {
  Ready(t.device);
  ncclReduce(t.data, t.data, t.count, ToNccl(t.dtype), ToNccl(op), root, state_->comm, state_->stream);
  Finish("Reduce");
}

void NcclGroup::Send(const Tensor& t, int dst) {
  Ready(t.device);
  ncclSend(t.data, t.count, ToNccl(t.dtype), dst, state_->comm, state_->stream);
  Finish("Send");
}

void NcclGroup::Recv(const Tensor& t, int src) {
  Ready(t.device);
  ncclRecv(t.data, t.count, ToNccl(t.dtype), src, state_->comm, state_->stream);
  Finish("Recv");
}

void NcclGroup::Barrier() {
  if (!state_->comm) throw CollectiveError("group '" + name_ + "': Barrier before any collective (no device yet)");
  Ready(state_->device);
  ncclAllReduce(state_->scratch, state_->scratch, 1, ncclInt32, ncclSum, state_->comm, state_->stream);
  Finish("Barrier");
}

}  // namespace orb::collective

// The plugin's entry point: liborb loads this library only when a group asks for NCCL,
// so that CPU-only programs never load CUDA. Errors come back as text.
extern "C" orb::collective::CollectiveGroup* OrbNcclConnect(orb::CoreWorker* worker, const char* name, int rank,
                                                            int size, const char* kv_prefix, int64_t timeout_ms,
                                                            std::string* error) {
  try {
    return orb::collective::NcclGroup::Connect(worker, name, rank, size, kv_prefix, std::chrono::milliseconds(timeout_ms))
        .release();
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
}
