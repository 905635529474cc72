// Pub/sub of node and job changes by long poll.
//
// Every published message gets the next sequence number and is kept in a bounded
// history. A poll names the channels and the last sequence its caller has seen; it is
// answered at once when newer messages exist, otherwise parked until one is published
// or its wait expires. Runs on the GCS event loop; not thread-safe.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <list>

#include "gcs_service.pb.h"

namespace orb::gcs {

class Publisher {
 public:
  explicit Publisher(size_t history = 10000) : history_limit_(history) {}

  void Publish(rpc::PubMessage message);

  using Reply = std::function<void(rpc::PollReply)>;
  // Answers now, or parks the poll. Returns a handle for Expire().
  uint64_t Poll(const rpc::PollRequest& request, Reply reply);
  // Answers a parked poll with nothing new (its wait ran out). No-op if already answered.
  void Expire(uint64_t poll_id);
  // Answers every parked poll (the GCS is stopping).
  void ExpireAll();

  int64_t last_sequence() const { return sequence_; }

 private:
  struct ParkedPoll {
    uint64_t id;
    rpc::PollRequest request;
    Reply reply;
  };
  // Messages after `after` on the request's channels.
  rpc::PollReply Collect(const rpc::PollRequest& request) const;

  size_t history_limit_;
  int64_t sequence_ = 0;
  uint64_t next_poll_id_ = 1;
  std::deque<rpc::PubMessage> history_;
  std::list<ParkedPoll> parked_;
};

}  // namespace orb::gcs
