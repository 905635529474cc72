#include "gcs/publisher.h"

#include <algorithm>

namespace orb::gcs {

void Publisher::Publish(rpc::PubMessage message) {
  message.set_sequence(++sequence_);
  history_.push_back(std::move(message));
  if (history_.size() > history_limit_) history_.pop_front();
  for (auto it = parked_.begin(); it != parked_.end();) {
    rpc::PollReply reply = Collect(it->request);
    if (reply.messages_size() > 0) {
      it->reply(std::move(reply));
      it = parked_.erase(it);
    } else {
      ++it;
    }
  }
}

rpc::PollReply Publisher::Collect(const rpc::PollRequest& request) const {
  rpc::PollReply reply;
  // A caller ahead of us saw a previous GCS incarnation: send it everything we have.
  int64_t after = request.after_sequence() > sequence_ ? 0 : request.after_sequence();
  for (const auto& m : history_) {
    if (m.sequence() <= after) continue;
    bool wanted = std::any_of(request.channels().begin(), request.channels().end(),
                              [&](int c) { return c == m.channel(); });
    if (m.has_log() && !request.job_id().empty() && m.log().job_id() != request.job_id()) wanted = false;
    if (wanted) *reply.add_messages() = m;
  }
  reply.set_last_sequence(sequence_);
  return reply;
}

uint64_t Publisher::Poll(const rpc::PollRequest& request, Reply reply) {
  rpc::PollReply now = Collect(request);
  if (now.messages_size() > 0 || request.wait_ms() <= 0 || request.after_sequence() > sequence_) {
    reply(std::move(now));
    return 0;
  }
  uint64_t id = next_poll_id_++;
  parked_.push_back({id, request, std::move(reply)});
  return id;
}

void Publisher::ExpireAll() {
  auto parked = std::move(parked_);
  parked_.clear();
  for (auto& p : parked) p.reply(Collect(p.request));
}

void Publisher::Expire(uint64_t poll_id) {
  for (auto it = parked_.begin(); it != parked_.end(); ++it) {
    if (it->id == poll_id) {
      it->reply(Collect(it->request));
      parked_.erase(it);
      return;
    }
  }
}

}  // namespace orb::gcs
