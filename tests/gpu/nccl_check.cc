// GPU check (needs a CUDA device; not part of `make test`): a one-rank NCCL group
// allreduces device memory, and a task that asks for GPU: 1 sees CUDA_VISIBLE_DEVICES.
// Run by tests/gpu/gpu_check.sh on a machine with a GPU; prints "gpu check ok".
// With --mps (an MPS control daemon running): two half-GPU tasks run CUDA at once on the
// one GPU, each with its MPS share; prints "mps check ok".
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

// Runs a kernel-free CUDA round trip under the lease's MPS share: "<share> ok" or what failed.
std::string CudaUnderShare() {
  const char* share = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  std::vector<float> host(1 << 20, 3.0f), back(host.size());
  float* device = nullptr;
  if (cudaMalloc(&device, host.size() * sizeof(float)) != cudaSuccess) return "cudaMalloc failed";
  cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(back.data(), device, host.size() * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(device);
  return std::string(share ? share : "<unset>") + (back == host ? " ok" : " copy mismatch");
}
ORB_REMOTE(CudaUnderShare);

int MpsCheck() {
  auto a = orb::Task(CudaUnderShare).SetResource("GPU", 0.5).Remote();
  auto b = orb::Task(CudaUnderShare).SetResource("GPU", 0.5).Remote();
  int failures = 0;
  for (auto* r : {&a, &b}) {
    std::string seen = *r->Get(120000);
    std::cout << (seen == "50 ok" ? "ok" : "FAILED") << ": a half-GPU task under MPS: " << seen << std::endl;
    failures += seen != "50 ok";
  }
  std::cout << (failures == 0 ? "mps check ok" : "mps check failed") << std::endl;
  orb::Shutdown();
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  orb::Config config;
  config.num_gpus = 1;
  bool mps = argc > 1 && std::string(argv[1]) == "--mps";
  if (mps) config.head_args = {"--gpu-mps", "on"};
  orb::Init(config, argc, argv);
  if (mps) return MpsCheck();
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
