// A model-server actor: requests arrive as concurrent calls (a threaded actor), and one
// decoding thread serves them with one of two schedulers.
//
//  - continuous: at every decoding step, waiting requests join the running batch (up to
//    max_batch; they read their prompts a character a step beside the others' decoding)
//    and finished ones leave, each answered as soon as its last token is out;
//  - static: a batch starts once max_batch requests wait (or the oldest has waited
//    static_wait_ms), runs until its longest request is done, and answers all at once;
//    requests that arrive meanwhile wait for the next batch.
#pragma once

#include <orb/api.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "char_model.h"

namespace inference {

struct Reply {
  std::string text;
  int64_t finish_ms = 0;  // when its last token was out (Unix ms)
  int batch_size = 0;     // the largest batch it ran in
  MSGPACK_DEFINE(text, finish_ms, batch_size);
};

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class ModelServer {
 public:
  ModelServer(std::string scheduler, int max_batch, int static_wait_ms)
      : model_(7), continuous_(scheduler == "continuous"), max_batch_(max_batch),
        static_wait_(std::chrono::milliseconds(static_wait_ms)), loop_([this] { Loop(); }) {}
  static ModelServer* Create(std::string scheduler, int max_batch, int static_wait_ms) {
    return new ModelServer(std::move(scheduler), max_batch, static_wait_ms);
  }
  ~ModelServer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    loop_.join();
  }

  // Generates `max_tokens` characters after `prompt`; returns when they are all out.
  Reply Generate(std::string prompt, int max_tokens) {
    auto request = std::make_shared<Request>();
    request->prompt = std::move(prompt);
    request->max_tokens = max_tokens;
    request->arrived = std::chrono::steady_clock::now();
    auto answer = request->done.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      waiting_.push_back(request);
    }
    cv_.notify_all();
    return answer.get();
  }

  // Requests waiting or running: what a pool grows on.
  int QueueLength() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(waiting_.size()) + running_;
  }

 private:
  struct Request {
    std::string prompt;
    int max_tokens = 0;
    std::chrono::steady_clock::time_point arrived;
    CharModel::Sequence seq;
    int batch_size = 0;
    std::promise<Reply> done;
  };
  using Batch = std::vector<std::shared_ptr<Request>>;

  void Loop() {
    Batch running;
    while (true) {
      Batch admitted;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (continuous_) {
          cv_.wait(lock, [&] { return stopping_ || !waiting_.empty() || !running.empty(); });
        } else {
          // Static: a full batch, or the oldest request's patience used up.
          cv_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
          while (!stopping_ && static_cast<int>(waiting_.size()) < max_batch_) {
            auto deadline = waiting_.front()->arrived + static_wait_;
            if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
          }
        }
        if (stopping_) return;
        while (!waiting_.empty() && static_cast<int>(running.size() + admitted.size()) < max_batch_) {
          admitted.push_back(waiting_.front());
          waiting_.pop_front();
        }
        running_ = static_cast<int>(running.size() + admitted.size());
      }
      for (auto& r : admitted) {
        r->seq.prompt = r->prompt;
        r->seq.max_tokens = r->max_tokens;
        running.push_back(r);
      }
      if (continuous_) {
        StepOnce(running);
        Batch still;
        for (auto& r : running) {
          if (r->seq.done()) {
            Finish(*r);
          } else {
            still.push_back(r);
          }
        }
        running.swap(still);
      } else {
        while (std::any_of(running.begin(), running.end(), [](const auto& r) { return !r->seq.done(); })) {
          StepOnce(running);
        }
        for (auto& r : running) Finish(*r);
        running.clear();
      }
      std::lock_guard<std::mutex> lock(mu_);
      running_ = static_cast<int>(running.size());
    }
  }

  void StepOnce(Batch& batch) {
    std::vector<CharModel::Sequence*> seqs;
    for (auto& r : batch) {
      seqs.push_back(&r->seq);
      r->batch_size = std::max(r->batch_size, static_cast<int>(batch.size()));
    }
    model_.Step(seqs);
  }

  void Finish(Request& r) { r.done.set_value(Reply{r.seq.text, NowMs(), r.batch_size}); }

  CharModel model_;
  bool continuous_;
  int max_batch_;
  std::chrono::milliseconds static_wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Request>> waiting_;
  int running_ = 0;
  bool stopping_ = false;
  std::thread loop_;  // last: started once the rest is set up
};

}  // namespace inference
