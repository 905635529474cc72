#include "raylet/death_watcher.h"

#include <spdlog/spdlog.h>

namespace orb {
namespace {

constexpr int kPollWaitMs = 30000;                         // how long the GCS may hold a poll
constexpr std::chrono::milliseconds kRetryDelay{1000};     // after a failed poll

}  // namespace

DeathWatcher::DeathWatcher(RpcClient<rpc::GcsService>* gcs, EventLoop* loop, OnJobFinished on_job_finished,
                           OnWorkerDied on_worker_died, OnJobRunning on_job_running)
    : gcs_(gcs),
      loop_(loop),
      on_job_finished_(std::move(on_job_finished)),
      on_worker_died_(std::move(on_worker_died)),
      on_job_running_(std::move(on_job_running)) {}

void DeathWatcher::Start() {
  loop_->Post([this] {
    CatchUp();
    Poll();
  });
}

void DeathWatcher::Poll() {
  if (stopped_) return;
  rpc::PollRequest request;
  request.add_channels(rpc::JOB_CHANNEL);
  request.add_channels(rpc::WORKER_CHANNEL);
  request.set_after_sequence(after_sequence_);
  request.set_wait_ms(kPollWaitMs);
  CallOptions call;
  call.timeout = std::chrono::milliseconds(kPollWaitMs + 5000);
  gcs_->Call<rpc::PollReply>(ORB_RPC(Poll), request, [this](const absl::Status& status, rpc::PollReply&& reply) {
    loop_->Post([this, status, reply = std::move(reply)] { OnPoll(status, reply); });
  }, call);
}

void DeathWatcher::OnPoll(const absl::Status& status, const rpc::PollReply& reply) {
  if (stopped_ || status.code() == absl::StatusCode::kCancelled) return;
  if (!status.ok()) {
    loop_->RunAfter(kRetryDelay, [this] { Poll(); });
    return;
  }
  if (reply.last_sequence() < after_sequence_) {
    // A restarted GCS numbers its messages from the start again: what was published
    // meanwhile is known only from its job table.
    spdlog::info("the GCS's channels started over; checking every job");
    after_sequence_ = 0;
    CatchUp();
  }
  for (const auto& message : reply.messages()) {
    if (message.has_job() && message.job().is_dead()) on_job_finished_(message.job());
    if (message.has_job() && !message.job().is_dead() && on_job_running_) on_job_running_(message.job());
    if (message.has_worker_failure()) on_worker_died_(message.worker_failure());
    after_sequence_ = std::max(after_sequence_, message.sequence());
  }
  after_sequence_ = std::max(after_sequence_, reply.last_sequence());
  Poll();
}

void DeathWatcher::CatchUp() {
  gcs_->Call<rpc::GetAllJobsReply>(ORB_RPC(GetAllJobs), rpc::GetAllJobsRequest(),
                                   [this](const absl::Status& status, rpc::GetAllJobsReply&& reply) {
                                     if (!status.ok()) return;
                                     loop_->Post([this, reply = std::move(reply)] {
                                       if (stopped_) return;
                                       for (const auto& job : reply.jobs()) {
                                         if (job.is_dead()) on_job_finished_(job);
                                         if (!job.is_dead() && on_job_running_) on_job_running_(job);
                                       }
                                     });
                                   });
}

}  // namespace orb
