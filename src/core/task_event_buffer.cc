#include "core/task_event_buffer.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <future>
#include <memory>
#include <string>

#include "common/unix_time.h"

namespace orb {

TaskEventBuffer::Options TaskEventBuffer::OptionsFromEnv() {
  Options options;
  if (const char* on = std::getenv("ORB_TASK_EVENTS")) options.enabled = std::string(on) != "0";
  if (const char* ms = std::getenv("ORB_TASK_EVENTS_FLUSH_MS")) {
    long value = std::atol(ms);
    if (value > 0) options.flush_interval = std::chrono::milliseconds(value);
  }
  return options;
}

TaskEventBuffer::TaskEventBuffer(RpcClient<rpc::GcsService>* gcs, EventLoop* loop, Options options)
    : gcs_(gcs), loop_(loop), options_(options) {}

void TaskEventBuffer::SetExecutor(const std::string& node_id, const std::string& worker_id, int32_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  node_id_ = node_id;
  worker_id_ = worker_id;
  pid_ = pid;
}

rpc::TaskEvent TaskEventBuffer::EventOf(const rpc::TaskSpec& spec, rpc::TaskState state, int64_t time_ns) const {
  rpc::TaskEvent e;
  e.set_task_id(spec.task_id());
  e.set_attempt(spec.attempt());
  e.set_job_id(spec.job_id());
  e.set_name(spec.name().empty() ? spec.function_name() : spec.name());
  if (spec.has_actor_creation()) {
    e.set_type("ACTOR_CREATION_TASK");
    e.set_actor_id(spec.actor_creation().actor_id());
  } else if (!spec.actor_id().empty()) {
    e.set_type("ACTOR_TASK");
    e.set_actor_id(spec.actor_id());
  } else {
    e.set_type("NORMAL_TASK");
  }
  e.set_state(state);
  e.set_time_ns(time_ns);
  e.set_language(spec.language());
  return e;
}

void TaskEventBuffer::Add(rpc::TaskEvent event, bool soon) {
  bool post = false, time = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (events_.size() >= options_.max_buffered) {
      ++dropped_;
      return;
    }
    events_.push_back(std::move(event));
    if (soon && !flush_posted_) post = flush_posted_ = true;
    if (!soon && !flush_due_) time = flush_due_ = true;
  }
  // Coalesced: under load, one call per kExecutorFlushDelay, not one per task.
  if (post) loop_->RunAfter(kExecutorFlushDelay, [this] { Flush(); });
  if (time) loop_->RunAfter(options_.flush_interval, [this] { Flush(); });
}

void TaskEventBuffer::RecordSpec(const rpc::TaskSpec& spec, rpc::TaskState state, const rpc::ErrorInfo* error) {
  if (!options_.enabled) return;
  rpc::TaskEvent e = EventOf(spec, state, UnixNanos());
  if (state == rpc::PENDING_NODE_ASSIGNMENT) e.mutable_required_resources()->insert(spec.resources().begin(), spec.resources().end());
  if (error) *e.mutable_error() = *error;
  Add(std::move(e));
}

void TaskEventBuffer::RecordRun(const rpc::TaskSpec& spec, int64_t start_ns, int64_t end_ns,
                                const rpc::ErrorInfo* error) {
  if (!options_.enabled) return;
  rpc::TaskEvent run = EventOf(spec, rpc::RUNNING, start_ns);
  {
    std::lock_guard<std::mutex> lock(mu_);
    run.set_node_id(node_id_);
    run.set_worker_id(worker_id_);
    run.set_worker_pid(pid_);
  }
  run.set_end_time_ns(end_ns);
  run.mutable_required_resources()->insert(spec.resources().begin(), spec.resources().end());
  if (!spec.has_actor_creation()) return Add(std::move(run), /*soon=*/true);
  // An actor's constructor is owned by the GCS, which records no events: its outcome too.
  Add(std::move(run));
  rpc::TaskEvent outcome = EventOf(spec, error ? rpc::FAILED : rpc::FINISHED, end_ns);
  if (error) *outcome.mutable_error() = *error;
  Add(std::move(outcome), /*soon=*/true);
}

void TaskEventBuffer::Flush(bool wait, std::chrono::milliseconds timeout) {
  if (!options_.enabled) return;
  auto request = std::make_shared<rpc::AddTaskEventsRequest>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    flush_due_ = flush_posted_ = false;
    if (events_.empty() && dropped_ == 0) return;
    for (auto& e : events_) *request->add_events() = std::move(e);
    events_.clear();
    request->set_dropped(dropped_);
    dropped_ = 0;
  }
  auto sent = std::make_shared<std::promise<void>>();
  std::future<void> done = sent->get_future();
  CallOptions call;
  call.timeout = std::chrono::milliseconds(5000);
  int64_t events = request->events_size();
  gcs_->Call<rpc::AddTaskEventsReply>(
      ORB_RPC(AddTaskEvents), *request,
      [this, events, sent](const absl::Status& status, rpc::AddTaskEventsReply&&) {
        if (!status.ok()) {
          spdlog::debug("the GCS did not take {} task events: {}", events, status.ToString());
          std::lock_guard<std::mutex> lock(mu_);
          dropped_ += events;
        }
        sent->set_value();
      },
      call);
  if (wait) done.wait_for(timeout);
}

}  // namespace orb
