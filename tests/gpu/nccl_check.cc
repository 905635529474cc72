// GPU check (needs a CUDA device; not part of `make test`): a one-rank NCCL group
// allreduces device memory, and a task that asks for GPU: 1 sees CUDA_VISIBLE_DEVICES.
// Run by tests/gpu/gpu_check.sh on a machine with a GPU; prints "gpu check ok".
#include <cuda_runtime.h>
#include <orb/api.h>

#include <cstdlib>
#include <iostream>
#include <vector>

namespace col = orb::collective;

std::string VisibleGpus() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v ? v : "<unset>";
}
ORB_REMOTE(VisibleGpus);

int main(int argc, char** argv) {
  orb::Config config;
  config.num_gpus = 1;
  orb::Init(config, argc, argv);
  int failures = 0;
  std::vector<float> host(1024, 2.0f);
  float* device = nullptr;
  if (cudaMalloc(&device, host.size() * sizeof(float)) != cudaSuccess) {
    std::cout << "FAILED: cudaMalloc" << std::endl;
    return 1;
  }
  cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  col::InitGroup("gpu-check", 1, 0, col::Backend::NCCL, std::chrono::seconds(60));
  col::AllReduce({device, host.size(), col::DType::FLOAT32, 0}, "gpu-check", col::ReduceOp::SUM);
  cudaMemcpy(host.data(), device, host.size() * sizeof(float), cudaMemcpyDeviceToHost);
  bool same = host[0] == 2.0f && host[1023] == 2.0f;  // one rank: the sum is the value
  std::cout << (same ? "ok" : "FAILED") << ": one-rank NCCL allreduce on device memory" << std::endl;
  failures += !same;
  std::string seen = *orb::Task(VisibleGpus).SetResource("GPU", 1).Remote().Get(60000);
  std::cout << (seen == "0" ? "ok" : "FAILED") << ": a GPU task sees CUDA_VISIBLE_DEVICES=" << seen << std::endl;
  failures += seen != "0";
  col::DestroyGroup("gpu-check");
  cudaFree(device);
  std::cout << (failures == 0 ? "gpu check ok" : "gpu check failed") << std::endl;
  orb::Shutdown();
  return failures == 0 ? 0 : 1;
}
