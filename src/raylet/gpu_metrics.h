// GPU utilisation and memory per GPU, read through NVML when the driver's library
// (libnvidia-ml.so.1) can be loaded at run time; on a node without it nothing is added.
#pragma once

#include "common/prometheus_text.h"

namespace orb {

// orb_gpu_utilization_ratio{gpu}, orb_gpu_memory_used_bytes{gpu},
// orb_gpu_memory_total_bytes{gpu}. Thread-safe; NVML is loaded on first use.
void AppendGpuMetrics(prom::Exposition* out);

}  // namespace orb
