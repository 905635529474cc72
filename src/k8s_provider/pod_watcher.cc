#include "k8s_provider/pod_watcher.h"

#include <spdlog/spdlog.h>

namespace orb {
namespace {

// How long one watch request stays open before the server ends it (and we resume).
constexpr std::chrono::seconds kWatchWindow{60};
constexpr std::chrono::milliseconds kRetryPause{500};

}  // namespace

PodWatcher::PodWatcher(KubeClient* client, std::string pods_path, std::string label_selector)
    : client_(client), pods_path_(std::move(pods_path)), selector_(std::move(label_selector)) {}

PodWatcher::~PodWatcher() { Stop(); }

void PodWatcher::Start() { thread_ = std::thread([this] { Run(); }); }

void PodWatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  // A watch may start just after a cancel: cancel until the thread has seen stopping_.
  while (thread_.joinable() && !finished_.load()) {
    client_->CancelWatch();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (thread_.joinable()) thread_.join();
}

std::optional<std::vector<nlohmann::json>> PodWatcher::Pods() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!synced_) return std::nullopt;
  std::vector<nlohmann::json> out;
  out.reserve(pods_.size());
  for (const auto& [name, pod] : pods_) out.push_back(pod);
  return out;
}

PodWatcher::Counters PodWatcher::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

void PodWatcher::SleepUnlessStopped(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  stop_cv_.wait_for(lock, d, [this] { return stopping_; });
}

absl::Status PodWatcher::List() {
  auto list = client_->Get(pods_path_ + "?labelSelector=" + UrlEncode(selector_));
  if (!list.ok()) return list.status();
  std::lock_guard<std::mutex> lock(mu_);
  pods_.clear();
  for (const auto& pod : list->value("items", nlohmann::json::array())) {
    pods_[pod["metadata"].value("name", "")] = pod;
  }
  resource_version_ = (*list)["metadata"].value("resourceVersion", "");
  synced_ = true;
  counters_.lists++;
  return absl::OkStatus();
}

void PodWatcher::Apply(const WatchEvent& event) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string version = event.object["metadata"].value("resourceVersion", "");
  if (!version.empty()) resource_version_ = version;
  if (event.type == "BOOKMARK") return;
  std::string name = event.object["metadata"].value("name", "");
  if (event.type == "DELETED") {
    pods_.erase(name);
  } else {
    pods_[name] = event.object;
  }
}

void PodWatcher::Run() {
  struct MarkFinished {
    std::atomic<bool>* finished;
    ~MarkFinished() { finished->store(true); }
  } mark{&finished_};
  bool need_list = true;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    if (need_list) {
      if (auto s = List(); !s.ok()) {
        spdlog::warn("cannot list pods ({}): {}", selector_, s.ToString());
        SleepUnlessStopped(kRetryPause);
        continue;
      }
      need_list = false;
    }
    std::string from;
    {
      std::lock_guard<std::mutex> lock(mu_);
      from = resource_version_;
    }
    absl::Status s = client_->Watch(pods_path_ + "?labelSelector=" + UrlEncode(selector_), from, kWatchWindow,
                                    [this](const WatchEvent& e) {
                                      Apply(e);
                                      return true;
                                    });
    bool broke = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      if (s.code() == absl::StatusCode::kOutOfRange) {
        spdlog::info("pod watch: version {} is gone; listing again", from);
        synced_ = false;
        need_list = true;
      } else {
        // The stream ended (its window ran out) or broke: the server replays what
        // happened since the last version seen, so resume from there.
        counters_.reconnects++;
        broke = !s.ok();
        if (broke) spdlog::info("pod watch broke ({}); resuming from version {}", s.ToString(), resource_version_);
      }
    }
    if (broke) SleepUnlessStopped(kRetryPause);
  }
}

}  // namespace orb
