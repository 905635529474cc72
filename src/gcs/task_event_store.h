// The tasks the GCS remembers for the state API, the timeline and the dashboard: task
// events from owners (submitted, scheduled, finished, failed) and executors (running,
// with the worker), merged per attempt into one TaskInfo. The history is bounded: past
// `max_tasks` attempts the oldest are forgotten (finished ones first) and counted as
// dropped. Object transfers reported by raylets are kept likewise (the newest
// `max_transfers`). In memory only, as in Ray: a restarted GCS starts a new history.
// Runs on the GCS event loop; not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/prometheus_text.h"
#include "gcs_service.pb.h"

namespace orb::gcs {

class TaskEventStore {
 public:
  explicit TaskEventStore(size_t max_tasks = 100000, size_t max_transfers = 10000)
      : max_tasks_(max_tasks), max_transfers_(max_transfers) {}

  void Add(const rpc::AddTaskEventsRequest& request);
  // Newest first; InvalidArgument for a bad filter (naming it and the known columns).
  absl::StatusOr<rpc::ListTasksReply> List(const rpc::ListTasksRequest& request) const;

  // orb_tasks{state}, orb_tasks_finished_total, orb_tasks_failed_total,
  // orb_task_events_dropped_total.
  void AppendMetrics(prom::Exposition* out) const;
  size_t size() const { return tasks_.size(); }

 private:
  using Key = std::pair<std::string, int32_t>;  // task ID, attempt
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<std::string>()(k.first) ^ (static_cast<size_t>(k.second) * 0x9e3779b97f4a7c15ull);
    }
  };
  struct Entry {
    rpc::TaskInfo info;
    std::list<Key>::iterator order;  // in order_, oldest first
  };
  void Merge(const rpc::TaskEvent& event, rpc::TaskInfo* info);
  void Evict();

  size_t max_tasks_, max_transfers_;
  std::unordered_map<Key, Entry, KeyHash> tasks_;
  std::list<Key> order_;
  std::deque<rpc::ObjectTransferEvent> transfers_;
  int64_t finished_total_ = 0, failed_total_ = 0, dropped_ = 0;
};

}  // namespace orb::gcs
