#include "core/in_flight_tasks.h"

namespace orb {

InFlightTasks::Handle InFlightTasks::Add(std::vector<rpc::TaskSpec> specs) {
  auto batch = std::make_shared<Batch>();
  batch->specs = std::move(specs);
  batch->done.assign(batch->specs.size(), false);
  // A batch of one never reports early (nothing runs after it): no need to index it.
  if (batch->specs.size() > 1) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < batch->specs.size(); ++i) by_task_[batch->specs[i].task_id()] = {batch, i};
  }
  return batch;
}

std::optional<rpc::TaskSpec> InFlightTasks::TakeEarly(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_task_.find(task_id);
  if (it == by_task_.end()) return std::nullopt;
  auto& [batch, index] = it->second;
  if (batch->done[index]) return std::nullopt;
  batch->done[index] = true;
  return batch->specs[index];
}

std::vector<rpc::TaskSpec> InFlightTasks::Finish(const Handle& batch) {
  std::vector<rpc::TaskSpec> remaining;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < batch->specs.size(); ++i) {
    if (batch->specs.size() > 1) by_task_.erase(batch->specs[i].task_id());
    if (!batch->done[i]) remaining.push_back(std::move(batch->specs[i]));
  }
  return remaining;
}

}  // namespace orb
