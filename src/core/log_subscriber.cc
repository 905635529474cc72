#include "core/log_subscriber.h"

#include <cstdlib>
#include <string>

namespace orb {

LogSubscriber::LogSubscriber(RpcClient<rpc::GcsService>* gcs, EventLoop* loop, JobID job, std::ostream* out)
    : gcs_(gcs), loop_(loop), job_(job), out_(out) {}

bool LogSubscriber::EnabledByEnv() {
  const char* on = std::getenv("ORB_LOG_TO_DRIVER");
  return !on || std::string(on) != "0";
}

void LogSubscriber::Start() { loop_->Post([this] { Poll(); }); }

void LogSubscriber::Print(const rpc::LogBatch& batch) {
  std::string prefix = "(" + (batch.actor_class().empty() ? "" : batch.actor_class() + " ") +
                       "pid=" + std::to_string(batch.pid()) + ", node=" + NodeID::FromBinary(batch.node_id()).Hex().substr(0, 8) +
                       ") ";
  std::string text;
  for (const auto& line : batch.lines()) text += prefix + line + "\n";
  *out_ << text << std::flush;
}

void LogSubscriber::Poll() {
  if (stopped_) return;
  rpc::PollRequest request;
  request.add_channels(rpc::LOG_CHANNEL);
  request.set_after_sequence(after_);
  request.set_wait_ms(30000);
  request.set_job_id(job_.Binary());
  CallOptions call;
  call.timeout = std::chrono::milliseconds(35000);
  gcs_->Call<rpc::PollReply>(
      ORB_RPC(Poll), request,
      [this](const absl::Status& status, rpc::PollReply&& reply) {
        if (stopped_) return;
        if (!status.ok()) {  // the GCS restarting: try again shortly
          loop_->RunAfter(std::chrono::milliseconds(1000), [this] { Poll(); });
          return;
        }
        for (const auto& m : reply.messages()) {
          if (m.has_log()) Print(m.log());
        }
        after_ = reply.last_sequence();
        loop_->Post([this] { Poll(); });
      },
      call);
}

}  // namespace orb
