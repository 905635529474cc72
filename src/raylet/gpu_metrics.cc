#include "raylet/gpu_metrics.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace orb {
namespace {

// The few NVML entry points used, with the layouts of nvml.h (stable ABI).
using nvmlDevice_t = void*;
struct NvmlUtilization {
  unsigned int gpu;     // percent of time a kernel ran
  unsigned int memory;  // percent of time memory was read or written
};
struct NvmlMemory {
  unsigned long long total, free, used;
};

struct Nvml {
  int (*init)() = nullptr;
  int (*count)(unsigned int*) = nullptr;
  int (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  int (*utilization)(nvmlDevice_t, NvmlUtilization*) = nullptr;
  int (*memory)(nvmlDevice_t, NvmlMemory*) = nullptr;
  bool loaded = false;
};

const Nvml& LoadNvml() {
  static Nvml nvml;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    nvml.init = reinterpret_cast<int (*)()>(::dlsym(lib, "nvmlInit_v2"));
    nvml.count = reinterpret_cast<int (*)(unsigned int*)>(::dlsym(lib, "nvmlDeviceGetCount_v2"));
    nvml.handle = reinterpret_cast<int (*)(unsigned int, nvmlDevice_t*)>(::dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    nvml.utilization =
        reinterpret_cast<int (*)(nvmlDevice_t, NvmlUtilization*)>(::dlsym(lib, "nvmlDeviceGetUtilizationRates"));
    nvml.memory = reinterpret_cast<int (*)(nvmlDevice_t, NvmlMemory*)>(::dlsym(lib, "nvmlDeviceGetMemoryInfo"));
    nvml.loaded = nvml.init && nvml.count && nvml.handle && nvml.utilization && nvml.memory && nvml.init() == 0;
  });
  return nvml;
}

}  // namespace

void AppendGpuMetrics(prom::Exposition* out) {
  const Nvml& nvml = LoadNvml();
  if (!nvml.loaded) return;
  unsigned int count = 0;
  if (nvml.count(&count) != 0) return;
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    if (nvml.handle(i, &device) != 0) continue;
    prom::Labels gpu{{"gpu", std::to_string(i)}};
    NvmlUtilization utilization{};
    if (nvml.utilization(device, &utilization) == 0) {
      out->Gauge("orb_gpu_utilization_ratio", "share of the last sample period a kernel ran on the GPU",
                 utilization.gpu / 100.0, gpu);
    }
    NvmlMemory memory{};
    if (nvml.memory(device, &memory) == 0) {
      out->Gauge("orb_gpu_memory_used_bytes", "GPU memory in use", static_cast<double>(memory.used), gpu);
      out->Gauge("orb_gpu_memory_total_bytes", "GPU memory in all", static_cast<double>(memory.total), gpu);
    }
  }
}

}  // namespace orb
