// Runs the tasks pushed to this worker, in order, on the thread that calls Run().
//
// PushTasks arrives on a gRPC thread and is queued; Run() (the worker's main thread)
// takes each batch, resolves arguments, calls the registered function, stores a large
// result in the node's object store, and answers with every result. A task that throws
// answers a TASK_ERROR naming the function and the message; the worker keeps serving.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/rpc.h"
#include "core_worker_service.pb.h"
#include "orb/internal/runtime.h"

namespace orb {

class TaskReceiver {
 public:
  // How the receiver reaches the rest of the core worker.
  struct Hooks {
    // Resolves a by-reference argument to its bytes; throws orb::Error on failure.
    std::function<std::shared_ptr<internal::ValueBuffer>(const rpc::ObjectRefProto&)> resolve_arg;
    // Stores a result: inline when small, else in the object store on the caller's behalf.
    std::function<rpc::ObjectValue(const rpc::TaskSpec&, std::string)> store_result;
    // Marks which task the current thread runs (empty when done).
    std::function<void(const std::string& task_id)> set_current_task;
  };

  explicit TaskReceiver(Hooks hooks) : hooks_(std::move(hooks)) {}

  void HandlePushTasks(const rpc::PushTasksRequest& request, rpc::PushTasksReply* reply, SendReply send);
  // Serves queued batches until Stop().
  void Run();
  void Stop();

 private:
  struct Batch {
    const rpc::PushTasksRequest* request;
    rpc::PushTasksReply* reply;
    SendReply send;
  };
  rpc::TaskResult Execute(const rpc::TaskSpec& spec);

  Hooks hooks_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;  // guarded by mu_
  bool stopped_ = false;     // guarded by mu_
};

}  // namespace orb
