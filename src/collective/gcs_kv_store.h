// Gloo's rendezvous store on the GCS key-value store: members publish their addresses
// under the group's prefix and wait for each other's. Keys live in the "collective"
// namespace and are removed when the group is destroyed.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "core/core_worker.h"

namespace orb::collective {

inline constexpr char kKvNamespace[] = "collective";

class GcsKvStore : public gloo::rendezvous::Store {
 public:
  GcsKvStore(CoreWorker* worker, std::string prefix, std::chrono::milliseconds timeout)
      : worker_(worker), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits (up to the timeout) for the key to exist.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  CoreWorker* worker_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

}  // namespace orb::collective
