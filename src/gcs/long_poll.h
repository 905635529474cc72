// Replies parked until a record they wait on changes, or until a deadline: how the GCS
// answers "tell me when this actor (or placement group) moves on" without polling.
// Runs on the GCS event loop; not thread-safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/event_loop.h"
#include "common/rpc.h"

namespace orb::gcs {

template <class Record, class Reply>
class LongPoll {
 public:
  // Fills a reply from the record's current state.
  using Fill = std::function<void(Reply*, const Record&)>;
  // Whether a record's state is what a parked reply waits for.
  using Ready = std::function<bool(const Record&)>;
  // The record's current state, for a reply whose deadline passed.
  using Current = std::function<const Record*(const std::string& key)>;

  LongPoll(EventLoop* loop, Fill fill, Current current)
      : loop_(loop), fill_(std::move(fill)), current_(std::move(current)) {}

  // Answers now if `record` is ready, else parks the reply for at most `wait`.
  void Answer(const std::string& key, const Record& record, Ready ready, Reply* reply, SendReply send,
              std::chrono::milliseconds wait) {
    if (ready(record) || wait.count() <= 0) {
      fill_(reply, record);
      return send(grpc::Status::OK);
    }
    uint64_t id = next_id_++;
    parked_[key].push_back(Parked{id, std::move(ready), reply, std::move(send)});
    loop_->RunAfter(std::min(wait, std::chrono::milliseconds(60000)), [this, key, id] { Expire(key, id); });
  }

  // Answers every parked reply with its record's current state (the GCS is stopping: a
  // call left parked would hold up the server's shutdown).
  void ExpireAll() {
    auto parked = std::move(parked_);
    parked_.clear();
    for (auto& [key, waiting] : parked) {
      const Record* record = current_(key);
      for (auto& p : waiting) {
        if (record) fill_(p.reply, *record);
        p.send(grpc::Status::OK);
      }
    }
  }

  // The record changed: answers every reply it now satisfies.
  void Notify(const std::string& key, const Record& record) {
    auto it = parked_.find(key);
    if (it == parked_.end()) return;
    std::vector<Parked> waiting = std::move(it->second);
    parked_.erase(it);
    for (auto& p : waiting) {
      if (p.ready(record)) {
        fill_(p.reply, record);
        p.send(grpc::Status::OK);
      } else {
        parked_[key].push_back(std::move(p));
      }
    }
  }

 private:
  struct Parked {
    uint64_t id;
    Ready ready;
    Reply* reply;
    SendReply send;
  };

  void Expire(const std::string& key, uint64_t id) {
    auto it = parked_.find(key);
    if (it == parked_.end()) return;
    for (auto p = it->second.begin(); p != it->second.end(); ++p) {
      if (p->id != id) continue;
      if (const Record* record = current_(key)) fill_(p->reply, *record);
      p->send(grpc::Status::OK);
      it->second.erase(p);
      return;
    }
  }

  EventLoop* loop_;
  Fill fill_;
  Current current_;
  std::unordered_map<std::string, std::vector<Parked>> parked_;
  uint64_t next_id_ = 1;
};

}  // namespace orb::gcs
