#include "raylet/gpu_allocator.h"

#include <algorithm>
#include <cmath>

namespace orb {

int64_t GpuAllocator::ToUnits(double amount) { return std::llround(amount * kUnitsPerGpu); }

std::optional<GpuGrant> GpuAllocator::Choose(double amount) const {
  int64_t units = ToUnits(amount);
  GpuGrant grant;
  if (units <= 0 || free_.empty()) return grant;
  if (units >= kUnitsPerGpu) {
    // Whole GPUs, each free of any other lease.
    size_t wanted = static_cast<size_t>((units + kUnitsPerGpu - 1) / kUnitsPerGpu);
    for (size_t i = 0; i < free_.size() && grant.ids.size() < wanted; ++i) {
      if (free_[i] == kUnitsPerGpu) grant.ids.push_back(static_cast<int>(i));
    }
    if (grant.ids.size() < wanted) return std::nullopt;
    grant.units_each = kUnitsPerGpu;
    return grant;
  }
  // A fraction: the fullest GPU it fits on.
  int best = -1;
  for (size_t i = 0; i < free_.size(); ++i) {
    if (free_[i] >= units && (best < 0 || free_[i] < free_[best])) best = static_cast<int>(i);
  }
  if (best < 0) return std::nullopt;
  grant.ids.push_back(best);
  grant.units_each = units;
  return grant;
}

bool GpuAllocator::Fits(double amount) const { return Choose(amount).has_value(); }

std::optional<GpuGrant> GpuAllocator::Allocate(double amount) {
  auto grant = Choose(amount);
  if (grant) {
    for (int id : grant->ids) free_[id] -= grant->units_each;
  }
  return grant;
}

void GpuAllocator::Release(const GpuGrant& grant) {
  for (int id : grant.ids) {
    if (id >= 0 && static_cast<size_t>(id) < free_.size()) {
      free_[id] = std::min(kUnitsPerGpu, free_[id] + grant.units_each);
    }
  }
}

std::string CheckGpuRequest(double amount) {
  int64_t units = GpuAllocator::ToUnits(amount);
  if (units > GpuAllocator::kUnitsPerGpu && units % GpuAllocator::kUnitsPerGpu != 0) {
    return "GPU " + std::to_string(amount) +
           ": a request for more than one GPU must be a whole number (fractions share one GPU)";
  }
  return "";
}

std::map<std::string, std::string> GpuEnv(double amount, double gpu_memory_bytes, size_t num_gpus, bool mps) {
  std::map<std::string, std::string> env;
  if (!mps || num_gpus == 0) return env;
  int64_t units = GpuAllocator::ToUnits(amount);
  if (units > 0 && units < GpuAllocator::kUnitsPerGpu) {
    int64_t percent = std::max<int64_t>(1, (units * 100 + GpuAllocator::kUnitsPerGpu - 1) / GpuAllocator::kUnitsPerGpu);
    env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(percent);
  }
  if (gpu_memory_bytes > 0) {
    // Per GPU, in MiB (MPS takes a unit suffix); the worker's ordinals start at 0.
    auto mib = static_cast<int64_t>(std::max(1.0, std::floor(gpu_memory_bytes / num_gpus / (1 << 20))));
    std::string limits;
    for (size_t i = 0; i < num_gpus; ++i) limits += (i ? "," : "") + std::to_string(i) + "=" + std::to_string(mib) + "M";
    env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = limits;
  }
  return env;
}

}  // namespace orb
