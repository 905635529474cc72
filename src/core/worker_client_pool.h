// RPC clients to other drivers and workers, one per address, created on first use.
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/rpc.h"
#include "core_worker_service.grpc.pb.h"

namespace orb {

class WorkerClientPool {
 public:
  explicit WorkerClientPool(std::string token) : token_(std::move(token)) {}

  RpcClient<rpc::CoreWorkerService>* Get(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& client = clients_[address];
    if (!client) client = std::make_unique<RpcClient<rpc::CoreWorkerService>>(address, token_);
    return client.get();
  }

 private:
  std::string token_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<RpcClient<rpc::CoreWorkerService>>> clients_;
};

}  // namespace orb
