#include "collective/gcs_kv_store.h"

#include <gloo/common/error.h>

#include <thread>

namespace orb::collective {

void GcsKvStore::set(const std::string& key, const std::vector<char>& data) {
  worker_->KvPut(kKvNamespace, prefix_ + key, std::string(data.begin(), data.end()));
}

std::vector<char> GcsKvStore::get(const std::string& key) {
  wait({key}, timeout_);
  auto value = worker_->KvGet(kKvNamespace, prefix_ + key);
  if (!value) throw gloo::IoException("rendezvous key " + prefix_ + key + " vanished");
  return std::vector<char>(value->begin(), value->end());
}

void GcsKvStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(2);
  for (const auto& key : keys) {
    while (!worker_->KvGet(kKvNamespace, prefix_ + key)) {
      if (std::chrono::steady_clock::now() >= deadline) {
        throw gloo::IoException("timed out after " + std::to_string(timeout.count()) +
                                " ms waiting for the other members of the group (key " + prefix_ + key + ")");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(50));
    }
  }
}

}  // namespace orb::collective
