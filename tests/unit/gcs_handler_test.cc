// The GCS's tables through its handler interface, without a network.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <future>
#include <mutex>
#include <set>

#include "common/event_loop.h"
#include "gcs/bundle_placement.h"
#include "gcs/gcs_handler.h"

using namespace orb;
using namespace orb::gcs;

namespace {

// Runs one handler call on the loop and waits for its reply.
template <class Req, class Reply, class Target, class Method>
std::pair<grpc::Status, Reply> Call(EventLoop& loop, Target& h, Method method, const Req& req) {
  std::promise<std::pair<grpc::Status, Reply>> done;
  auto reply = std::make_shared<Reply>();
  loop.Post([&, reply] {
    (h.*method)(req, reply.get(), [&done, reply](grpc::Status s) { done.set_value({s, *reply}); });
  });
  return done.get_future().get();
}

rpc::NodeInfo Node(const NodeID& id) {
  rpc::NodeInfo n;
  n.set_node_id(id.Binary());
  n.set_ip("127.0.0.1");
  (*n.mutable_resources_total())["CPU"] = 2;
  return n;
}

}  // namespace

TEST_CASE("the KV store keeps namespaces apart, lists by prefix and deletes by prefix", "[gcs]") {
  EventLoop loop;
  loop.Start();
  auto h = GcsHandler::Create(NewInMemoryTableStore(), &loop, GcsOptions());
  REQUIRE(h.ok());
  auto put = [&](const std::string& ns, const std::string& key, const std::string& value, bool overwrite) {
    rpc::KvPutRequest r;
    r.set_namespace_(ns);
    r.set_key(key);
    r.set_value(value);
    r.set_overwrite(overwrite);
    return Call<rpc::KvPutRequest, rpc::KvPutReply>(loop, **h, &GcsHandler::HandleKvPut, r).second.added();
  };
  CHECK(put("a", "x/1", "one", false));
  CHECK(put("a", "x/2", "two", false));
  CHECK(put("b", "x/1", "other", false));
  CHECK_FALSE(put("a", "x/1", "ignored", false));
  rpc::KvGetRequest get;
  get.set_namespace_("a");
  get.set_key("x/1");
  CHECK(Call<rpc::KvGetRequest, rpc::KvGetReply>(loop, **h, &GcsHandler::HandleKvGet, get).second.value() == "one");
  CHECK_FALSE(put("a", "x/1", "uno", true));
  CHECK(Call<rpc::KvGetRequest, rpc::KvGetReply>(loop, **h, &GcsHandler::HandleKvGet, get).second.value() == "uno");
  rpc::KvKeysRequest keys;
  keys.set_namespace_("a");
  keys.set_prefix("x/");
  auto listed = Call<rpc::KvKeysRequest, rpc::KvKeysReply>(loop, **h, &GcsHandler::HandleKvKeys, keys).second;
  REQUIRE(listed.keys_size() == 2);
  CHECK(listed.keys(0) == "x/1");
  rpc::KvDeleteRequest del;
  del.set_namespace_("a");
  del.set_key("x/");
  del.set_by_prefix(true);
  CHECK(Call<rpc::KvDeleteRequest, rpc::KvDeleteReply>(loop, **h, &GcsHandler::HandleKvDelete, del).second.deleted() == 2);
  get.set_namespace_("b");
  CHECK(Call<rpc::KvGetRequest, rpc::KvGetReply>(loop, **h, &GcsHandler::HandleKvGet, get).second.found());
  loop.Stop();
}

// A transport into the void: the node never answers, as if killed.
class BlackHole : public gossip::GossipTransport {
 public:
  void Send(const std::string& address, const rpc::GossipMessage& m) override {
    std::lock_guard<std::mutex> lock(mu);
    if (m.has_ping()) pinged.push_back(address);
  }
  std::mutex mu;
  std::vector<std::string> pinged;
};

TEST_CASE("a node that stops answering probes is declared dead, published, and can never come back", "[gcs]") {
  EventLoop loop;
  loop.Start();
  GcsOptions options;
  options.gossip.probe_interval = std::chrono::milliseconds(20);
  options.gossip.probe_timeout = std::chrono::milliseconds(10);
  options.gossip.suspicion_timeout = std::chrono::milliseconds(100);
  auto h = GcsHandler::Create(NewInMemoryTableStore(), &loop, options);
  REQUIRE(h.ok());
  BlackHole network;
  loop.Post([&] { (*h)->StartGossip("127.0.0.1:1", &network); });
  NodeID id = NodeID::FromRandom();
  rpc::RegisterNodeRequest reg;
  *reg.mutable_node() = Node(id);
  reg.mutable_node()->set_raylet_port(4321);
  auto registered = Call<rpc::RegisterNodeRequest, rpc::RegisterNodeReply>(loop, **h, &GcsHandler::HandleRegisterNode, reg);
  REQUIRE(registered.first.ok());
  CHECK(registered.second.cluster_id() == (*h)->cluster_id());
  CHECK_FALSE((*h)->cluster_id().empty());

  // A subscriber parked on the node channel hears about the death.
  rpc::PollRequest poll;
  poll.add_channels(rpc::NODE_CHANNEL);
  poll.set_after_sequence(1);  // the registration was message 1
  poll.set_wait_ms(10000);
  std::promise<rpc::PollReply> heard;
  auto reply = std::make_shared<rpc::PollReply>();
  loop.Post([&, reply] { (*h)->HandlePoll(poll, reply.get(), [&heard, reply](grpc::Status) { heard.set_value(*reply); }); });
  auto message = heard.get_future().get();
  REQUIRE(message.messages_size() == 1);
  CHECK(message.messages(0).node().state() == rpc::NodeInfo::DEAD);
  CHECK_THAT(message.messages(0).node().death_reason(), Catch::Contains("probes"));
  {
    std::lock_guard<std::mutex> lock(network.mu);
    REQUIRE_FALSE(network.pinged.empty());
    CHECK(network.pinged.front() == "127.0.0.1:4321");
  }

  auto again = Call<rpc::RegisterNodeRequest, rpc::RegisterNodeReply>(loop, **h, &GcsHandler::HandleRegisterNode, reg);
  CHECK(again.first.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  loop.Stop();
}

TEST_CASE("job IDs are unique and jobs are marked finished", "[gcs]") {
  EventLoop loop;
  loop.Start();
  auto h = GcsHandler::Create(NewInMemoryTableStore(), &loop, GcsOptions());
  REQUIRE(h.ok());
  rpc::AddJobRequest add;
  auto first = Call<rpc::AddJobRequest, rpc::AddJobReply>(loop, **h, &GcsHandler::HandleAddJob, add).second.job_id();
  auto second = Call<rpc::AddJobRequest, rpc::AddJobReply>(loop, **h, &GcsHandler::HandleAddJob, add).second.job_id();
  CHECK(first != second);
  rpc::MarkJobFinishedRequest fin;
  fin.set_job_id(first);
  CHECK(Call<rpc::MarkJobFinishedRequest, rpc::MarkJobFinishedReply>(loop, **h, &GcsHandler::HandleMarkJobFinished, fin).first.ok());
  rpc::GetJobRequest get;
  get.set_job_id(first);
  CHECK(Call<rpc::GetJobRequest, rpc::GetJobReply>(loop, **h, &GcsHandler::HandleGetJob, get).second.job().is_dead());
  fin.set_job_id("nope");
  CHECK(Call<rpc::MarkJobFinishedRequest, rpc::MarkJobFinishedReply>(loop, **h, &GcsHandler::HandleMarkJobFinished, fin)
            .first.error_code() == grpc::StatusCode::NOT_FOUND);
  loop.Stop();
}

TEST_CASE("a worker's death is published on the worker channel; a malformed report is refused", "[gcs]") {
  EventLoop loop;
  loop.Start();
  auto h = GcsHandler::Create(NewInMemoryTableStore(), &loop, GcsOptions());
  REQUIRE(h.ok());
  rpc::ReportWorkerFailureRequest report;
  report.set_worker_id(WorkerID::FromRandom().Binary());
  report.set_node_id(NodeID::FromRandom().Binary());
  report.set_reason("killed by signal 9 (SIGKILL)");
  using Report = std::pair<grpc::Status, rpc::ReportWorkerFailureReply>;
  Report reported = Call<rpc::ReportWorkerFailureRequest, rpc::ReportWorkerFailureReply>(
      loop, **h, &GcsHandler::HandleReportWorkerFailure, report);
  REQUIRE(reported.first.ok());

  rpc::PollRequest poll;
  poll.add_channels(rpc::WORKER_CHANNEL);
  poll.set_wait_ms(0);
  auto heard = Call<rpc::PollRequest, rpc::PollReply>(loop, **h, &GcsHandler::HandlePoll, poll).second;
  REQUIRE(heard.messages_size() == 1);
  CHECK(heard.messages(0).channel() == rpc::WORKER_CHANNEL);
  CHECK(heard.messages(0).worker_failure().worker_id() == report.worker_id());
  CHECK(heard.messages(0).worker_failure().node_id() == report.node_id());

  report.set_worker_id("not an id");
  Report refused = Call<rpc::ReportWorkerFailureRequest, rpc::ReportWorkerFailureReply>(
      loop, **h, &GcsHandler::HandleReportWorkerFailure, report);
  CHECK(refused.first.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(refused.first.error_message(), Catch::Contains("worker_id"));
  poll.set_after_sequence(heard.last_sequence());
  CHECK(Call<rpc::PollRequest, rpc::PollReply>(loop, **h, &GcsHandler::HandlePoll, poll).second.messages_size() == 0);
  loop.Stop();
}

TEST_CASE("dead actors beyond the limit are forgotten, oldest first, in memory and in storage", "[gcs]") {
  EventLoop loop;
  loop.Start();
  std::shared_ptr<TableStore> shared = NewInMemoryTableStore();
  GcsOptions options;
  options.max_dead_actors = 2;
  // A store the handler uses but does not own, so that a second handler can load it.
  struct Borrowed : TableStore {
    explicit Borrowed(TableStore* s) : s(s) {}
    absl::Status Put(std::string_view t, std::string_view k, std::string_view v) override { return s->Put(t, k, v); }
    absl::StatusOr<std::optional<std::string>> Get(std::string_view t, std::string_view k) override { return s->Get(t, k); }
    absl::Status Delete(std::string_view t, std::string_view k) override { return s->Delete(t, k); }
    absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Scan(std::string_view t,
                                                                         std::string_view prefix) override {
      return s->Scan(t, prefix);
    }
    TableStore* s;
  };
  std::vector<std::string> ids;
  {
    auto h = GcsHandler::Create(std::make_unique<Borrowed>(shared.get()), &loop, options);
    REQUIRE(h.ok());
    for (int i = 0; i < 4; ++i) {
      rpc::RegisterActorRequest reg;
      ids.push_back(ActorID::FromRandom().Binary());
      reg.mutable_actor()->set_actor_id(ids.back());
      reg.mutable_actor()->set_class_name("Counter");
      reg.mutable_actor()->mutable_creation_spec()->set_function_name("Counter::Create");
      auto* actors = (*h)->actors();
      REQUIRE(Call<rpc::RegisterActorRequest, rpc::RegisterActorReply>(loop, *actors, &ActorManager::HandleRegisterActor, reg)
                  .first.ok());
      rpc::KillActorRequest kill;
      kill.set_actor_id(ids.back());
      kill.set_no_restart(true);
      REQUIRE(Call<rpc::KillActorRequest, rpc::KillActorReply>(loop, *actors, &ActorManager::HandleKillActor, kill)
                  .first.ok());
    }
    auto listed = Call<rpc::ListActorsRequest, rpc::ListActorsReply>(loop, *(*h)->actors(), &ActorManager::HandleListActors,
                                                                      rpc::ListActorsRequest());
    REQUIRE(listed.second.actors_size() == 2);
    CHECK(listed.second.actors(0).state() == rpc::ActorInfo::DEAD);
    std::set<std::string> kept = {listed.second.actors(0).actor_id(), listed.second.actors(1).actor_id()};
    CHECK(kept == std::set<std::string>{ids[2], ids[3]});
  }
  auto rows = shared->Scan("actor", "");
  REQUIRE(rows.ok());
  CHECK(rows->size() == 2);
}

TEST_CASE("a registration with an address or resources that cannot be is refused, naming the field", "[gcs]") {
  EventLoop loop;
  loop.Start();
  auto h = GcsHandler::Create(NewInMemoryTableStore(), &loop, GcsOptions());
  REQUIRE(h.ok());
  auto refusal = [&](const std::function<void(rpc::NodeInfo*)>& spoil) {
    rpc::RegisterNodeRequest reg;
    *reg.mutable_node() = Node(NodeID::FromRandom());
    reg.mutable_node()->set_raylet_port(4321);
    spoil(reg.mutable_node());
    auto [status, reply] = Call<rpc::RegisterNodeRequest, rpc::RegisterNodeReply>(loop, **h, &GcsHandler::HandleRegisterNode, reg);
    return status.ok() ? std::string("accepted") : status.error_message();
  };
  CHECK(refusal([](rpc::NodeInfo*) {}) == "accepted");
  CHECK_THAT(refusal([](rpc::NodeInfo* n) { n->set_ip("not-an-ip"); }),
             Catch::Contains("ip 'not-an-ip' is not an IPv4 or IPv6 address"));
  CHECK_THAT(refusal([](rpc::NodeInfo* n) { n->set_raylet_port(0); }), Catch::Contains("raylet_port 0 is not a port"));
  CHECK_THAT(refusal([](rpc::NodeInfo* n) { n->set_object_manager_port(70000); }),
             Catch::Contains("object_manager_port 70000"));
  CHECK_THAT(refusal([](rpc::NodeInfo* n) { (*n->mutable_resources_total())["GPU"] = -1; }),
             Catch::Contains("resource 'GPU' has invalid amount -1"));
  CHECK_THAT(refusal([](rpc::NodeInfo* n) { (*n->mutable_resources_total())["CPU"] = std::nan(""); }),
             Catch::Contains("invalid amount nan (must be a finite number"));
  // None of them was taken.
  auto nodes = Call<rpc::GetAllNodesRequest, rpc::GetAllNodesReply>(loop, **h, &GcsHandler::HandleGetAllNodes,
                                                                    rpc::GetAllNodesRequest());
  CHECK(nodes.second.nodes_size() == 1);
}

TEST_CASE("bundles without GPUs keep off GPU nodes while other nodes can take them", "[gcs][placement]") {
  using orb::gcs::NodeCapacity;
  auto node = [](const std::string& id, double cpus, double gpus) {
    std::map<std::string, double> r{{"CPU", cpus}};
    if (gpus > 0) r["GPU"] = gpus;
    return NodeCapacity{id, orb::ResourceSet::FromMap(r), gpus > 0};
  };
  // Four one-CPU bundles spread over a 1-CPU head, two 2-CPU nodes and a roomier GPU node:
  // the fourth reuses a CPU node rather than take the GPU node's CPU.
  std::vector<NodeCapacity> nodes = {node("head", 1, 0), node("cpu1", 2, 0), node("cpu2", 2, 0), node("gpu", 4, 2)};
  std::vector<orb::gcs::BundleToPlace> cpu_bundles;
  for (int i = 0; i < 4; ++i) cpu_bundles.push_back({i, orb::ResourceSet::FromMap({{"CPU", 1}})});
  auto spread = orb::gcs::PlaceBundles(orb::rpc::PlacementGroupInfo::SPREAD, cpu_bundles, {}, nodes);
  REQUIRE(spread);
  for (const auto& [index, where] : *spread) CHECK(where != "gpu");
  auto pack = orb::gcs::PlaceBundles(orb::rpc::PlacementGroupInfo::PACK, {cpu_bundles[0], cpu_bundles[1]}, {}, nodes);
  REQUIRE(pack);
  CHECK(pack->at(0) != "gpu");
  // Bundles asking for GPUs go there; and with no other room, CPU bundles do too.
  auto gpu = orb::gcs::PlaceBundles(orb::rpc::PlacementGroupInfo::PACK,
                                    {{0, orb::ResourceSet::FromMap({{"CPU", 1}, {"GPU", 1}})}}, {}, nodes);
  REQUIRE(gpu);
  CHECK(gpu->at(0) == "gpu");
  auto only_gpu = orb::gcs::PlaceBundles(orb::rpc::PlacementGroupInfo::SPREAD, {cpu_bundles[0]}, {}, {node("gpu", 4, 2)});
  REQUIRE(only_gpu);
  CHECK(only_gpu->at(0) == "gpu");
}
