// Keeps a current copy of the pods matching a label selector, by list-then-watch as
// Kubernetes' informers do: list once (taking the list's resourceVersion), then watch
// from that version; a stream that ends or breaks is resumed from the last version seen
// (bookmarks included); a version the server no longer has (410 Gone) means list again.
//
// Runs its own thread between Start and Stop; Pods() may be called from any thread.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "k8s_provider/kube_client.h"

namespace orb {

class PodWatcher {
 public:
  // `pods_path`: the pod collection, e.g. /api/v1/namespaces/orb/pods.
  PodWatcher(KubeClient* client, std::string pods_path, std::string label_selector);
  ~PodWatcher();

  void Start();
  void Stop();
  // The pods as last seen, or nullopt while there is no trustworthy copy (before the
  // first list, and from a broken stream until the next list or resumed watch).
  std::optional<std::vector<nlohmann::json>> Pods() const;

  struct Counters {
    int lists = 0;        // full lists (the first, and after 410 Gone)
    int reconnects = 0;   // watches resumed from a version after a stream ended or broke
  };
  Counters counters() const;

 private:
  void Run();
  absl::Status List();
  void Apply(const WatchEvent& event);
  void SleepUnlessStopped(std::chrono::milliseconds d);

  KubeClient* const client_;
  const std::string pods_path_;
  const std::string selector_;

  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  bool synced_ = false;
  std::map<std::string, nlohmann::json> pods_;  // by name
  std::string resource_version_;
  Counters counters_;
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

}  // namespace orb
