#include "core/task_receiver.h"

#include "orb/internal/function_registry.h"

namespace orb {
namespace {

class InlineArg : public internal::ValueBuffer {
 public:
  explicit InlineArg(const std::string* bytes) : bytes_(bytes) {}
  const char* data() const override { return bytes_->data(); }
  size_t size() const override { return bytes_->size(); }

 private:
  const std::string* bytes_;  // owned by the request, which outlives the call
};

}  // namespace

void TaskReceiver::HandlePushTasks(const rpc::PushTasksRequest& request, rpc::PushTasksReply* reply,
                                   SendReply send) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return send(grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker is exiting"));
  queue_.push_back(Batch{&request, reply, std::move(send)});
  cv_.notify_one();
}

void TaskReceiver::Run() {
  while (true) {
    Batch batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopped_ || !queue_.empty(); });
      if (queue_.empty()) return;
      batch = std::move(queue_.front());
      queue_.pop_front();
    }
    for (const auto& spec : batch.request->tasks()) *batch.reply->add_results() = Execute(spec);
    batch.send(grpc::Status::OK);
  }
}

void TaskReceiver::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  cv_.notify_all();
}

rpc::TaskResult TaskReceiver::Execute(const rpc::TaskSpec& spec) {
  rpc::TaskResult result;
  result.set_task_id(spec.task_id());
  result.set_return_id(spec.return_id());
  auto fail = [&](rpc::ErrorType type, const std::string& message) {
    result.mutable_value()->mutable_error()->set_type(type);
    result.mutable_value()->mutable_error()->set_message(message);
    return result;
  };
  const internal::Invoker* invoker = internal::FunctionRegistry::Instance().Find(spec.function_name());
  if (!invoker) {
    return fail(rpc::FUNCTION_NOT_FOUND, "function '" + spec.function_name() +
                                             "' is not registered in the worker (is ORB_REMOTE(" +
                                             spec.function_name() + ") linked into the worker's code?)");
  }
  hooks_.set_current_task(spec.task_id());
  std::string output;
  try {
    std::vector<std::shared_ptr<internal::ValueBuffer>> args;
    args.reserve(spec.args_size());
    for (const auto& arg : spec.args()) {
      if (arg.has_ref()) {
        args.push_back(hooks_.resolve_arg(arg.ref()));
      } else {
        args.push_back(std::make_shared<InlineArg>(&arg.value()));
      }
    }
    output = (*invoker)(args);
  } catch (const internal::ArgumentError& e) {
    hooks_.set_current_task("");
    return fail(rpc::BAD_ARGUMENT, spec.function_name() + ": " + e.what());
  } catch (const std::exception& e) {
    hooks_.set_current_task("");
    return fail(rpc::TASK_ERROR, spec.function_name() + ": " + e.what());
  } catch (...) {
    hooks_.set_current_task("");
    return fail(rpc::TASK_ERROR, spec.function_name() + ": threw a non-standard exception");
  }
  hooks_.set_current_task("");
  try {
    *result.mutable_value() = hooks_.store_result(spec, std::move(output));
  } catch (const std::exception& e) {
    return fail(rpc::OBJECT_STORE_FULL, spec.function_name() + ": cannot store the result: " + e.what());
  }
  return result;
}

}  // namespace orb
