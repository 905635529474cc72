// The LeaseGranter with a fake worker supply and hand-built cluster views: queued
// requests follow capacity when the view changes, cancelled requests start nothing, and
// a burst of requests starts no more workers than the node can run.
#include <catch2/catch.hpp>

#include <map>
#include <mutex>
#include <thread>

#include "raylet/lease_granter.h"

using namespace orb;

namespace {

// Workers that "start" when the test says so.
class FakeWorkers : public WorkerSupply {
 public:
  absl::Status StartWorker(const rpc::JobInfo& job, const WorkerKind& kind) override {
    WorkerProcess w;
    w.id = WorkerID::FromRandom();
    w.job = JobID::FromBinary(job.job_id());
    w.kind = kind;
    w.port = 10000 + static_cast<int>(workers_.size());
    workers_[w.id] = w;
    ++started;
    return absl::OkStatus();
  }
  WorkerProcess* PopIdle(const JobID& job, const WorkerKind& kind, bool for_actor) override {
    for (auto& [id, w] : workers_) {
      if (w.state == WorkerProcess::State::kIdle && w.job == job && w.kind == kind && !(for_actor && w.ran_tasks)) {
        w.state = WorkerProcess::State::kLeased;
        return &w;
      }
    }
    return nullptr;
  }
  void PushIdle(const WorkerID& id) override { workers_[id].state = WorkerProcess::State::kIdle; }
  void Kill(const WorkerID& id) override { workers_.erase(id); }
  void Retire(const WorkerID& id) override { retired.push_back(id); }
  void StopWorkersOf(const JobID&) override {}
  int NumStarting(const JobID& job, const WorkerKind& kind) const override {
    int n = 0;
    for (const auto& [id, w] : workers_) n += w.state == WorkerProcess::State::kStarting && w.job == job && w.kind == kind;
    return n;
  }
  int NumStartingTotal() const override {
    int n = 0;
    for (const auto& [id, w] : workers_) n += w.state == WorkerProcess::State::kStarting;
    return n;
  }
  int max_starting() const override { return 100; }
  const WorkerProcess* Find(const WorkerID& id) const override {
    auto it = workers_.find(id);
    return it == workers_.end() ? nullptr : &it->second;
  }
  // Every starting worker is up and idle.
  void FinishStarting() {
    for (auto& [id, w] : workers_) {
      if (w.state == WorkerProcess::State::kStarting) w.state = WorkerProcess::State::kIdle;
    }
  }
  int started = 0;
  std::vector<WorkerID> retired;

 private:
  std::map<WorkerID, WorkerProcess> workers_;
};

NodeView Node(double cpus_total, double cpus_free, int port) {
  NodeView n;
  n.id = NodeID::FromRandom();
  n.address = "198.18.0.1:" + std::to_string(port);
  n.total = ResourceSet::FromMap({{"CPU", cpus_total}});
  n.available = ResourceSet::FromMap({{"CPU", cpus_free}});
  return n;
}

// A granter for a node with `cpus` CPUs, run on its own loop; every call goes through
// the loop, as in the raylet.
class Harness {
 public:
  explicit Harness(double cpus, std::chrono::milliseconds grace = std::chrono::seconds(60)) {
    LeaseGranterOptions options;
    options.node_id = NodeID::FromRandom();
    options.infeasible_grace = grace;
    job_ = JobIDFromInt(7);
    auto fetch = [job = job_](const JobID&, std::function<void(absl::StatusOr<rpc::JobInfo>)> done) {
      rpc::JobInfo info;
      info.set_job_id(job.Binary());
      done(info);
    };
    granter_ = std::make_unique<LeaseGranter>(ResourceSet::FromMap({{"CPU", cpus}}), &workers_, fetch, &loop_,
                                              options);
    loop_.Start();
  }
  ~Harness() {
    loop_.Stop();
    loop_.Join();
  }

  template <class Fn>
  auto On(Fn fn) {
    auto result = RunOnLoop(&loop_, [&] { return fn(); }, std::chrono::seconds(10));
    REQUIRE(result.has_value());
    return *result;
  }
  // Lets what the loop has queued (job fetches, grace timers due) run.
  void Settle() {
    for (int i = 0; i < 3; ++i) On([] { return 0; });
  }
  // The workers being started are up: what waited for them is granted.
  void WorkersStarted() {
    On([&] {
      workers_.FinishStarting();
      granter_->Dispatch();
      return 0;
    });
  }

  // Asks for a lease of `cpus`; its reply lands in replies[request_id].
  void Request(uint64_t request_id, double cpus, bool spilled_here = false, const WorkerID& requester = Requester()) {
    rpc::RequestWorkerLeaseRequest request;
    request.set_job_id(job_.Binary());
    request.set_requester_worker_id(requester.Binary());
    request.set_lease_request_id(request_id);
    request.set_grant_or_reject(spilled_here);
    (*request.mutable_resources())["CPU"] = cpus;
    On([&] {
      granter_->RequestLease(request, [this, request_id](rpc::RequestWorkerLeaseReply reply) {
        std::lock_guard<std::mutex> lock(mu_);
        replies_[request_id] = std::move(reply);
      });
      return 0;
    });
  }
  std::optional<rpc::RequestWorkerLeaseReply> Reply(uint64_t request_id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = replies_.find(request_id);
    if (it == replies_.end()) return std::nullopt;
    return it->second;
  }
  int CountReplies(const std::function<bool(const rpc::RequestWorkerLeaseReply&)>& pred) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& [id, reply] : replies_) n += pred(reply);
    return n;
  }
  // How many requests were sent on to `node`.
  int SentTo(const NodeView& node) {
    return CountReplies([&](const auto& r) { return r.retry_at_raylet().node_id() == node.id.Binary(); });
  }
  void SetView(std::vector<NodeView> nodes) {
    On([&] {
      granter_->UpdateClusterView(nodes);
      return 0;
    });
  }
  int64_t Demand() {
    return On([&] {
      int64_t n = 0;
      for (const auto& d : granter_->PendingDemand()) n += d.count();
      return n;
    });
  }
  size_t Queued() {
    return On([&] { return granter_->num_queued(); });
  }

  static const WorkerID& Requester() {
    static const WorkerID id = WorkerID::FromRandom();
    return id;
  }

  FakeWorkers workers_;
  std::unique_ptr<LeaseGranter> granter_;

 private:
  EventLoop loop_;
  JobID job_;
  std::mutex mu_;
  std::map<uint64_t, rpc::RequestWorkerLeaseReply> replies_;
};

bool Granted(const rpc::RequestWorkerLeaseReply& r) { return !r.lease_id().empty(); }

}  // namespace

TEST_CASE("a burst of lease requests starts no more workers than the node can run", "[lease]") {
  Harness h(2);
  for (uint64_t id = 1; id <= 10; ++id) h.Request(id, 1);
  h.Settle();
  CHECK(h.workers_.started == 2);
  CHECK(h.Queued() == 10);
  h.WorkersStarted();
  CHECK(h.CountReplies(Granted) == 2);
  CHECK(h.workers_.started == 2);  // the other 8 wait for CPU, not for workers
}

TEST_CASE("a cancelled request is answered canceled, starts nothing and leaves the demand", "[lease]") {
  Harness h(1);
  h.Request(1, 1);
  h.Request(2, 1);
  h.Request(3, 1);
  h.Settle();
  CHECK(h.Demand() == 3);
  CHECK(h.workers_.started == 1);
  WorkerID stranger = WorkerID::FromRandom();
  CHECK_FALSE(h.On([&] { return h.granter_->CancelRequest(stranger, 2); }));  // not its request
  CHECK(h.On([&] { return h.granter_->CancelRequest(Harness::Requester(), 2); }));
  CHECK(h.On([&] { return h.granter_->CancelRequest(Harness::Requester(), 3); }));
  CHECK_FALSE(h.On([&] { return h.granter_->CancelRequest(Harness::Requester(), 3); }));  // already gone
  REQUIRE(h.Reply(2).has_value());
  CHECK(h.Reply(2)->canceled());
  CHECK(h.Reply(2)->rejected());
  CHECK(h.Demand() == 1);
  // Cancelling the one whose worker is starting leaves that worker idle for later work.
  CHECK(h.On([&] { return h.granter_->CancelRequest(Harness::Requester(), 1); }));
  CHECK(h.Demand() == 0);
  CHECK(h.workers_.started == 1);
  CHECK(h.On([&] { return h.granter_->stats().canceled; }) == 3);
}

TEST_CASE("a lease returned with its worker exiting frees its CPU and retires the worker", "[lease]") {
  Harness h(1);
  h.Request(1, 1);
  h.Settle();
  h.WorkersStarted();
  REQUIRE(h.Reply(1).has_value());
  REQUIRE(Granted(*h.Reply(1)));
  h.Request(2, 1);  // waits for the one CPU
  h.Settle();
  CHECK_FALSE(h.Reply(2).has_value());
  LeaseID lease = LeaseID::FromBinary(h.Reply(1)->lease_id());
  WorkerID worker = WorkerID::FromBinary(h.Reply(1)->worker_address().worker_id());
  h.On([&] {
    h.granter_->ReturnLease(lease, /*worker_failed=*/false, /*worker_exiting=*/true);
    return 0;
  });
  CHECK(h.workers_.retired == std::vector<WorkerID>{worker});
  h.WorkersStarted();
  REQUIRE(h.Reply(2).has_value());
  CHECK(Granted(*h.Reply(2)));
  CHECK(h.Reply(2)->worker_address().worker_id() != worker.Binary());  // a new worker, not the retired one
}

TEST_CASE("queued requests go to nodes that join, one per node with room", "[lease]") {
  // The autoscaling case: a 1-CPU head, four 2-CPU tasks, 2-CPU nodes joining one by one.
  Harness h(1);
  for (uint64_t id = 1; id <= 4; ++id) h.Request(id, 2);
  h.Settle();
  CHECK(h.Queued() == 4);
  CHECK(h.Demand() == 4);
  std::vector<NodeView> nodes{Node(2, 2, 7001)};
  h.SetView(nodes);
  CHECK(h.SentTo(nodes[0]) == 1);
  CHECK(h.Queued() == 3);  // the others wait here rather than queue behind it
  // The joined node is busy now; a second joins.
  nodes[0].available = ResourceSet::FromMap({{"CPU", 0}});
  nodes.push_back(Node(2, 2, 7002));
  h.SetView(nodes);
  CHECK(h.SentTo(nodes[0]) == 1);
  CHECK(h.SentTo(nodes[1]) == 1);
  nodes[1].available = ResourceSet::FromMap({{"CPU", 0}});
  nodes.push_back(Node(2, 2, 7003));
  nodes.push_back(Node(2, 2, 7004));
  h.SetView(nodes);
  for (const auto& n : nodes) CHECK(h.SentTo(n) == 1);
  CHECK(h.Queued() == 0);
  CHECK(h.On([&] { return h.granter_->stats().replaced; }) == 4);
}

TEST_CASE("requests another raylet sent here move on when this node cannot serve them", "[lease]") {
  Harness h(2);
  h.Request(1, 2, /*spilled_here=*/true);
  h.Settle();
  h.WorkersStarted();
  REQUIRE(h.Reply(1).has_value());
  CHECK(Granted(*h.Reply(1)));
  // Two more land here while the node is full: they queue...
  h.Request(2, 2, /*spilled_here=*/true);
  h.Request(3, 2, /*spilled_here=*/true);
  h.Settle();
  CHECK(h.Queued() == 2);
  // ...until a node with room for both joins.
  NodeView idle = Node(4, 4, 7001);
  h.SetView({idle});
  CHECK(h.SentTo(idle) == 2);
  CHECK(h.Queued() == 0);
}

TEST_CASE("a request only busy nodes could run waits here, not behind the first of them", "[lease]") {
  Harness h(1, std::chrono::milliseconds(100));
  h.Request(1, 2);
  h.Settle();
  NodeView busy = Node(2, 0, 7001);
  h.SetView({busy});
  // The grace period passes several times: the request stays, with its demand.
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  h.Settle();
  CHECK(h.Queued() == 1);
  CHECK_FALSE(h.Reply(1).has_value());
  CHECK(h.Demand() == 1);
  busy.available = ResourceSet::FromMap({{"CPU", 2}});
  h.SetView({busy});
  CHECK(h.SentTo(busy) == 1);
}

TEST_CASE("a request this node can serve now stays, whatever joins", "[lease]") {
  Harness h(4);
  h.Request(1, 1);
  h.Request(2, 1);
  h.Settle();
  h.SetView({Node(8, 8, 7001), Node(8, 8, 7002)});
  CHECK(h.Queued() == 2);  // waiting for their workers, with room here
  CHECK(h.CountReplies([](const auto&) { return true; }) == 0);
}

TEST_CASE("what was sent to a node counts against it only until its figures could have changed", "[lease]") {
  // A node that runs what it was sent and finishes before its next gossip round reports
  // no change: after view_reservation_ttl it shows its room again.
  Harness h(1);
  h.Request(1, 2);
  h.Request(2, 2);
  h.Settle();
  NodeView node = Node(2, 2, 7001);
  h.SetView({node});
  CHECK(h.SentTo(node) == 1);  // the second waits: the node looks full
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  h.Settle();
  CHECK(h.SentTo(node) == 2);
  CHECK(h.Queued() == 0);
}
