// The node's GPUs, one by one: a lease asking for whole GPUs gets GPUs no other lease
// uses; one asking for a fraction shares a GPU with other fractions, packed onto the
// fullest GPU it fits on (so that whole GPUs stay free for whole requests). Amounts are
// kept in fixed point (1/10,000 of a GPU), as Ray does, so that four 0.25s fill a GPU
// exactly.
//
// Not thread-safe (the lease granter's loop owns it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace orb {

struct GpuGrant {
  std::vector<int> ids;     // GPU indices on the node, ascending
  int64_t units_each = 0;   // how much of each it holds, in GpuAllocator units
};

class GpuAllocator {
 public:
  static constexpr int64_t kUnitsPerGpu = 10000;

  explicit GpuAllocator(size_t gpus) : free_(gpus, kUnitsPerGpu) {}

  // Whether a lease of `amount` GPUs fits now (0: always).
  bool Fits(double amount) const;
  // The GPUs for a lease of `amount`; nullopt when it does not fit now. An empty grant
  // for 0 or for a node without GPUs.
  std::optional<GpuGrant> Allocate(double amount);
  void Release(const GpuGrant& grant);
  size_t size() const { return free_.size(); }
  // How much of GPU `id` is free, in GPUs.
  double FreeOn(int id) const { return static_cast<double>(free_.at(id)) / kUnitsPerGpu; }

  static int64_t ToUnits(double amount);

 private:
  std::optional<GpuGrant> Choose(double amount) const;
  std::vector<int64_t> free_;
};

// What a request for GPUs cannot be, whatever the node: a fraction above one GPU (1.5).
// Empty when it is fine.
std::string CheckGpuRequest(double amount);

// The environment a lease's worker needs for its GPUs besides CUDA_VISIBLE_DEVICES: with
// MPS, a fraction of a GPU is that share of its streaming multiprocessors
// (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), and `gpu_memory_bytes` (the lease's GPU_memory)
// caps the device memory it may pin on each of its GPUs (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT,
// by device ordinal as the worker sees them).
std::map<std::string, std::string> GpuEnv(double amount, double gpu_memory_bytes, size_t num_gpus, bool mps);

}  // namespace orb
