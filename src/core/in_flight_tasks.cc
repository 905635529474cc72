#include "core/in_flight_tasks.h"

namespace orb {

InFlightTasks::Handle InFlightTasks::Add(std::vector<rpc::TaskSpec> specs, const rpc::Address& worker) {
  auto batch = std::make_shared<Batch>();
  batch->specs = std::move(specs);
  batch->worker = worker;
  batch->done.assign(batch->specs.size(), false);
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < batch->specs.size(); ++i) by_task_[batch->specs[i].task_id()] = {batch, i};
  return batch;
}

std::optional<rpc::Address> InFlightTasks::WorkerOf(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_task_.find(task_id);
  if (it == by_task_.end() || it->second.first->done[it->second.second]) return std::nullopt;
  return it->second.first->worker;
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
    by_task_.erase(batch->specs[i].task_id());
    if (!batch->done[i]) remaining.push_back(std::move(batch->specs[i]));
  }
  return remaining;
}

}  // namespace orb
