// The tasks a submitter has pushed and not yet heard back about, so that results a
// worker reports early (ReportTaskResults, before its batch's reply) complete their
// tasks at once, and the batch's reply — or its failure — covers only the rest.
//
// Thread-safe: pushes, early reports and replies arrive on different threads.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/common_types.h"

namespace orb {

class InFlightTasks {
 public:
  struct Batch;
  using Handle = std::shared_ptr<Batch>;

  // Records a batch pushed to `worker`; Finish() takes it back.
  Handle Add(std::vector<rpc::TaskSpec> specs, const rpc::Address& worker);
  // The worker running (or about to run) the task `task_id`, if it is in flight.
  std::optional<rpc::Address> WorkerOf(const std::string& task_id);
  // The spec of the task `task_id` completes, if it is in flight and not done yet.
  std::optional<rpc::TaskSpec> TakeEarly(const std::string& task_id);
  // The batch's reply (or failure) came: the specs not completed early, in order.
  std::vector<rpc::TaskSpec> Finish(const Handle& batch);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::pair<Handle, size_t>> by_task_;  // guarded by mu_
};

struct InFlightTasks::Batch {
  std::vector<rpc::TaskSpec> specs;
  rpc::Address worker;
  std::vector<bool> done;  // guarded by the owning InFlightTasks' mu_
};

}  // namespace orb
