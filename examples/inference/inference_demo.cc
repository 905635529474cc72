// Inference with continuous batching, beside static batching, on the same load.
//
// A pool of ModelServer actors (model_server.h) serves generation requests of varied
// lengths that arrive at a set rate (Poisson, seeded: both schedulers get the very same
// requests at the same moments). For each load and scheduler it prints a JSON line with
// the latency percentiles (arrival to last token) and the throughput, then, per load,
// whether both schedulers produced identical outputs. With --scale-pool the pool grows by
// one server while the servers' mean queue passes --scale-up-queue and shrinks when a
// server has been idle for a while; on an autoscaled cluster the autoscaler brings the
// nodes new servers need.
//
//   inference_demo [--orb-address=H:P] [--loads=20,40,60] [--duration-s=10] [--servers=2]
//                  [--max-batch=16] [--static-wait-ms=50] [--schedulers=continuous,static]
//                  [--scale-pool] [--max-servers=4] [--scale-up-queue=24] [--idle-tail-s=0]
//                  [--csv=FILE]
#include <CLI/CLI.hpp>
#include <orb/api.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "model_server.h"

using inference::ModelServer;
using inference::Reply;
ORB_REMOTE(ModelServer::Create, &ModelServer::Generate, &ModelServer::QueueLength);

namespace {

struct Request {
  double at_ms;  // since the run's start
  std::string prompt;
  int max_tokens;
};

// Poisson arrivals at `rps` for `duration_s`; most requests short, some long (as chat
// traffic is), prompts of 4–12 characters.
std::vector<Request> MakeLoad(double rps, double duration_s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rps / 1000.0);
  std::uniform_int_distribution<int> prompt_len(4, 12), chr(0, 63), shorter(8, 32), longer(64, 160);
  std::bernoulli_distribution is_long(0.25);
  std::vector<Request> load;
  for (double t = gap(rng); t < duration_s * 1000; t += gap(rng)) {
    std::string prompt;
    for (int i = prompt_len(rng); i > 0; --i) prompt += inference::Vocabulary()[chr(rng)];
    load.push_back({t, prompt, is_long(rng) ? longer(rng) : shorter(rng)});
  }
  return load;
}

struct Options {
  std::vector<double> loads = {20, 40, 60};
  double duration_s = 10;
  int servers = 2;
  int max_servers = 4;
  int max_batch = 16;
  int static_wait_ms = 50;
  std::vector<std::string> schedulers = {"continuous", "static"};
  bool scale_pool = false;
  double scale_up_queue = 24;
  double idle_tail_s = 0;  // with --scale-pool: how long the pool stays up, idle, after a run
  std::string csv;
};

using Server = orb::ActorHandle<ModelServer>;

// The servers requests go to, grown and shrunk by queue length when asked.
class Pool {
 public:
  Pool(const Options& o, const std::string& scheduler) : o_(o), scheduler_(scheduler) {
    for (int i = 0; i < o.servers; ++i) Add();
    for (auto& s : servers_) *s.handle.Task(&ModelServer::QueueLength).Remote().Get(120000);  // created
  }
  ~Pool() {
    stop_ = true;
    if (scaler_.joinable()) scaler_.join();
    for (auto& s : servers_) s.handle.Kill();
  }
  void StartScaling() {
    scaler_ = std::thread([this] {
      while (!stop_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        Scale();
      }
    });
  }
  Server Next() {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t tries = 0; tries < servers_.size(); ++tries) {
      Entry& e = servers_[next_++ % servers_.size()];
      if (!e.draining) return e.handle;
    }
    return servers_[0].handle;
  }
  int largest() const { return largest_; }
  // Servers that take requests now.
  int live() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(std::count_if(servers_.begin(), servers_.end(), [](const Entry& e) { return !e.draining; }));
  }

 private:
  struct Entry {
    Server handle;
    bool draining = false;
    int idle_looks = 0;
  };
  void Add() {
    servers_.push_back({orb::Actor(ModelServer::Create)
                            .SetMaxConcurrency(1024)
                            .SetResource("CPU", 1)
                            .Remote(scheduler_, o_.max_batch, o_.static_wait_ms)});
    largest_ = std::max<int>(largest_, static_cast<int>(servers_.size()));
  }
  void Scale() {
    std::vector<Server> handles;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& e : servers_) handles.push_back(e.handle);
    }
    std::vector<int> queues;
    for (auto& h : handles) queues.push_back(*h.Task(&ModelServer::QueueLength).Remote().Get(10000));
    std::lock_guard<std::mutex> lock(mu_);
    int live = 0, queued = 0;
    for (size_t i = 0; i < queues.size(); ++i) {
      Entry& e = servers_[i];
      e.idle_looks = queues[i] == 0 ? e.idle_looks + 1 : 0;
      if (!e.draining) ++live, queued += queues[i];
    }
    if (live > 0 && queued / static_cast<double>(live) > o_.scale_up_queue && live < o_.max_servers) {
      Add();
      std::printf("{\"event\": \"pool_grew\", \"servers\": %d, \"mean_queue\": %.1f}\n", live + 1,
                  queued / static_cast<double>(live));
      std::fflush(stdout);
      return;
    }
    // A server idle for 2 s gets no new requests; idle 1 s more, it is gone.
    for (size_t i = 0; i < servers_.size(); ++i) {
      Entry& e = servers_[i];
      if (e.draining && e.idle_looks >= 12) {
        e.handle.Kill();
        servers_.erase(servers_.begin() + static_cast<long>(i));
        break;  // indices moved: the rest next time
      }
      if (!e.draining && e.idle_looks >= 8 && live > o_.servers) {
        e.draining = true;
        --live;
        std::printf("{\"event\": \"pool_shrank\", \"servers\": %d}\n", live);
        std::fflush(stdout);
      }
    }
  }

  const Options& o_;
  std::string scheduler_;
  std::mutex mu_;
  std::vector<Entry> servers_;
  size_t next_ = 0;
  int largest_ = 0;
  std::atomic<bool> stop_{false};
  std::thread scaler_;
};

struct Result {
  std::vector<std::string> texts;
  std::vector<double> latency_ms;
  double tokens_per_s = 0;
  double mean_batch = 0;
  int servers = 0;      // the most at once
  int servers_end = 0;  // after the idle tail
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

Result Serve(const std::vector<Request>& load, const std::string& scheduler, const Options& o) {
  Pool pool(o, scheduler);
  if (o.scale_pool) pool.StartScaling();
  std::vector<orb::ObjectRef<Reply>> replies;
  std::vector<int64_t> sent_ms;
  auto start = std::chrono::steady_clock::now();
  for (const Request& r : load) {
    std::this_thread::sleep_until(start + std::chrono::microseconds(static_cast<int64_t>(r.at_ms * 1000)));
    sent_ms.push_back(inference::NowMs());
    replies.push_back(pool.Next().Task(&ModelServer::Generate).Remote(r.prompt, r.max_tokens));
  }
  Result result;
  int64_t last = 0, tokens = 0, batch_sum = 0;
  for (size_t i = 0; i < replies.size(); ++i) {
    Reply reply = *replies[i].Get(600000);
    result.texts.push_back(reply.text);
    result.latency_ms.push_back(static_cast<double>(reply.finish_ms - sent_ms[i]));
    last = std::max(last, reply.finish_ms);
    tokens += static_cast<int64_t>(reply.text.size());
    batch_sum += reply.batch_size;
  }
  double seconds = sent_ms.empty() ? 1 : std::max(1.0, static_cast<double>(last - sent_ms.front())) / 1000;
  result.tokens_per_s = static_cast<double>(tokens) / seconds;
  result.mean_batch = replies.empty() ? 0 : static_cast<double>(batch_sum) / static_cast<double>(replies.size());
  result.servers = pool.largest();
  if (o.scale_pool) std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(o.idle_tail_s * 1000)));
  result.servers_end = pool.live();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string loads_text = "20,40,60", schedulers_text = "continuous,static";
  CLI::App app{"continuous vs static batching on a pool of model-server actors"};
  app.allow_extras();  // --orb-address=... is orb::Init's
  app.add_option("--loads", loads_text, "request rates to run, requests/s, comma-separated");
  app.add_option("--duration-s", o.duration_s, "seconds of arrivals per run")->check(CLI::PositiveNumber);
  app.add_option("--servers", o.servers, "model servers in the pool (its least)")->check(CLI::PositiveNumber);
  app.add_option("--max-servers", o.max_servers, "the most the pool grows to with --scale-pool");
  app.add_option("--max-batch", o.max_batch, "sequences per decoding step, at most")->check(CLI::PositiveNumber);
  app.add_option("--static-wait-ms", o.static_wait_ms, "static batching: the longest a request waits for a full batch");
  app.add_option("--schedulers", schedulers_text, "continuous, static, or both");
  app.add_flag("--scale-pool", o.scale_pool, "grow and shrink the pool with its queue length");
  app.add_option("--scale-up-queue", o.scale_up_queue, "mean requests per server above which the pool grows");
  app.add_option("--idle-tail-s", o.idle_tail_s, "with --scale-pool: seconds the pool stays up idle after a run");
  app.add_option("--csv", o.csv, "also write the figures to this CSV file");
  CLI11_PARSE(app, argc, argv);
  o.loads.clear();
  std::stringstream loads(loads_text), schedulers(schedulers_text);
  for (std::string item; std::getline(loads, item, ',');) o.loads.push_back(std::stod(item));
  o.schedulers.clear();
  for (std::string item; std::getline(schedulers, item, ',');) {
    if (item != "continuous" && item != "static") {
      std::cerr << "inference_demo: unknown scheduler '" << item << "' (continuous or static)\n";
      return 2;
    }
    o.schedulers.push_back(item);
  }

  orb::Init(argc, argv);
  std::ofstream csv;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    csv << "scheduler,load_rps,requests,p50_ms,p95_ms,p99_ms,tokens_per_s,mean_batch,servers\n";
  }
  bool identical = true;
  for (double rps : o.loads) {
    std::vector<Request> load = MakeLoad(rps, o.duration_s, 42);
    std::vector<Result> results;
    for (const std::string& scheduler : o.schedulers) {
      Result r = Serve(load, scheduler, o);
      double p50 = Percentile(r.latency_ms, 50), p95 = Percentile(r.latency_ms, 95), p99 = Percentile(r.latency_ms, 99);
      std::printf("{\"workload\": \"inference\", \"scheduler\": \"%s\", \"load_rps\": %g, \"requests\": %zu, "
                  "\"p50_ms\": %.1f, \"p95_ms\": %.1f, \"p99_ms\": %.1f, \"tokens_per_s\": %.0f, "
                  "\"mean_batch\": %.1f, \"servers\": %d, \"servers_end\": %d}\n",
                  scheduler.c_str(), rps, load.size(), p50, p95, p99, r.tokens_per_s, r.mean_batch, r.servers,
                  r.servers_end);
      std::fflush(stdout);
      if (csv.is_open()) {
        csv << scheduler << "," << rps << "," << load.size() << "," << p50 << "," << p95 << "," << p99 << ","
            << r.tokens_per_s << "," << r.mean_batch << "," << r.servers << "\n";
      }
      results.push_back(std::move(r));
    }
    bool same = std::all_of(results.begin(), results.end(), [&](const Result& r) { return r.texts == results[0].texts; });
    identical &= same;
    std::printf("{\"workload\": \"inference\", \"load_rps\": %g, \"outputs_identical\": %s}\n", rps,
                same ? "true" : "false");
  }
  orb::Shutdown();
  return identical ? 0 : 1;
}
