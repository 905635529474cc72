// RPC clients to other processes, one per address, created on first use.
// Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/rpc.h"

namespace orb {

template <class Service>
class ClientPool {
 public:
  explicit ClientPool(std::string token) : token_(std::move(token)) {}

  RpcClient<Service>* Get(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& client = clients_[address];
    if (!client) client = std::make_unique<RpcClient<Service>>(address, token_);
    return client.get();
  }

  // Cancels every client's calls in flight and waits for their callbacks.
  void Drain(std::chrono::milliseconds timeout) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [address, client] : clients_) client->CancelAll();
    for (auto& [address, client] : clients_) client->WaitIdle(timeout);
  }

 private:
  std::string token_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<RpcClient<Service>>> clients_;
};

}  // namespace orb
