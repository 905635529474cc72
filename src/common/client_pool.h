// RPC clients to other processes, one per address, created on first use and dropped
// when idle: a client no call is using, that no caller holds, and that has not been
// used for `idle_after` (processes come and go; their clients, channels and sockets
// must not pile up). Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "common/rpc.h"

namespace orb {

// `Client` is constructed from (address, token) and has CancelAll() and WaitIdle(timeout).
template <class Client>
class ClientPoolOf {
 public:
  explicit ClientPoolOf(std::string token, std::chrono::milliseconds idle_after = std::chrono::minutes(2))
      : token_(std::move(token)), idle_after_(idle_after) {}

  // The client for `address`; hold it while using it (and while a call of it may run).
  std::shared_ptr<Client> Get(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = std::chrono::steady_clock::now();
    if (now >= next_sweep_) {
      DropIdle(now);
      next_sweep_ = now + idle_after_ / 2;
    }
    Entry& entry = clients_[address];
    if (!entry.client) entry.client = std::make_shared<Client>(address, token_);
    entry.last_used = now;
    return entry.client;
  }

  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return clients_.size();
  }

  // Cancels every client's calls in flight and waits for their callbacks.
  void Drain(std::chrono::milliseconds timeout) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [address, entry] : clients_) entry.client->CancelAll();
    for (auto& [address, entry] : clients_) entry.client->WaitIdle(timeout);
  }

 private:
  struct Entry {
    std::shared_ptr<Client> client;
    std::chrono::steady_clock::time_point last_used;
  };

  // REQUIRES: mu_ held.
  void DropIdle(std::chrono::steady_clock::time_point now) {
    for (auto it = clients_.begin(); it != clients_.end();) {
      bool idle = now - it->second.last_used >= idle_after_ && it->second.client.use_count() == 1 &&
                  it->second.client->WaitIdle(std::chrono::milliseconds(0));
      it = idle ? clients_.erase(it) : std::next(it);
    }
  }

  const std::string token_;
  const std::chrono::milliseconds idle_after_;
  std::mutex mu_;
  std::map<std::string, Entry> clients_;  // guarded by mu_
  std::chrono::steady_clock::time_point next_sweep_;  // guarded by mu_
};

// gRPC clients of `Service`.
template <class Service>
using ClientPool = ClientPoolOf<RpcClient<Service>>;

// The client for `address` from `pool`, its `methods` routed over the peer's call
// stream at `stream` ("ip:port", RpcClient::RouteOverCallStream) if it is not routed
// yet; an empty `stream`: as Get.
template <class Service>
std::shared_ptr<RpcClient<Service>> GetRouted(ClientPool<Service>& pool, const std::string& address,
                                              const std::string& stream,
                                              const std::set<std::string, std::less<>>& methods) {
  auto client = pool.Get(address);
  if (!stream.empty() && client->route_state() == RpcClient<Service>::RouteState::kNone) {
    client->RouteOverCallStream(stream, methods);
  }
  return client;
}

}  // namespace orb
