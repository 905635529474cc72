// gcs_server and raylet as real processes: authentication, malformed requests (RPCs,
// gossip, the object stream), bad flags, and a GCS killed with SIGKILL and restarted on
// its storage.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "common/daemon_launcher.h"
#include "common/id.h"
#include "common/process.h"
#include "common/rpc.h"
#include "common/session.h"
#include "common/sockets.h"
#include "raylet/object_manager/object_stream_protocol.h"
#include "gcs_service.grpc.pb.h"
#include "gossip.grpc.pb.h"
#include "raylet_service.grpc.pb.h"
#include "wait_for.h"

namespace fs = std::filesystem;
using namespace orb;

namespace {

struct TempDir {
  TempDir() : path(fs::temp_directory_path() / ("orb-daemons-" + std::to_string(::getpid()) + "-" + std::to_string(counter++))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
  static inline int counter = 0;
};

struct Daemon {
  DaemonStart started;
  ~Daemon() { StopProcess(started.pid, std::chrono::milliseconds(2000)); }
};

std::unique_ptr<Daemon> StartGcs(const TempDir& dir, const std::string& token, const std::string& storage = "",
                                 int port = 0) {
  std::vector<std::string> argv = {FindOrbBinary("gcs_server"), "--port", std::to_string(port), "--suspicion-timeout-ms",
                                   "2000"};
  if (!token.empty()) {
    WriteStringToFile((dir.path / "token").string(), token, 0600).IgnoreError();
    argv.insert(argv.end(), {"--token-file", (dir.path / "token").string()});
  }
  if (!storage.empty()) argv.insert(argv.end(), {"--storage-dir", storage});
  static int started_count = 0;
  auto started = StartDaemon(argv, (dir.path / ("gcs-" + std::to_string(++started_count) + ".out")).string(),
                             /*die_with_parent=*/true, std::chrono::seconds(20));
  REQUIRE(started.ok());
  auto d = std::make_unique<Daemon>();
  d->started = *started;
  return d;
}

std::unique_ptr<Daemon> StartRaylet(const TempDir& dir, const std::string& gcs, const std::string& token) {
  std::vector<std::string> argv = {FindOrbBinary("raylet"), "--gcs-address", gcs, "--num-cpus", "1",
                                   "--object-store-memory", std::to_string(16 << 20), "--resources", "{\"zone_a\": 2}"};
  if (!token.empty()) argv.insert(argv.end(), {"--token-file", (dir.path / "token").string()});
  static int started_count = 0;  // each raylet its own output: the start line is read from it
  std::string out = (dir.path / ("raylet-" + std::to_string(++started_count) + ".out")).string();
  auto started = StartDaemon(argv, out, true, std::chrono::seconds(20));
  REQUIRE(started.ok());
  auto d = std::make_unique<Daemon>();
  d->started = *started;
  return d;
}

using orb::testing::WaitFor;

int RunAndWait(const std::vector<std::string>& argv, const std::string& out) {
  ProcessOptions p;
  p.argv = argv;
  p.output_path = out;
  auto pid = SpawnProcess(p);
  REQUIRE(pid.ok());
  int status = 0;
  ::waitpid(*pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("every RPC without the cluster token is refused as UNAUTHENTICATED", "[security]") {
  TempDir dir;
  auto gcs = StartGcs(dir, "s3cret-token");
  RpcClient<rpc::GcsService> anonymous(gcs->started.address, "");
  auto reply = anonymous.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest());
  CHECK(reply.status().code() == absl::StatusCode::kUnauthenticated);
  RpcClient<rpc::GcsService> wrong(gcs->started.address, "wrong-token!");
  CHECK(wrong.CallSync<rpc::KvGetReply>(ORB_RPC(KvGet), rpc::KvGetRequest()).status().code() ==
        absl::StatusCode::kUnauthenticated);
  RpcClient<rpc::GcsService> member(gcs->started.address, "s3cret-token");
  CHECK(member.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest()).ok());
  // The same methods over the GCS's call stream: refused without the token too.
  auto info = member.CallSync<rpc::GetMetricsReply>(ORB_RPC(GetMetrics), rpc::GetMetricsRequest());
  REQUIRE(info.ok());
  REQUIRE(info->call_stream_port() > 0);
  std::string stream = "127.0.0.1:" + std::to_string(info->call_stream_port());
  wrong.RouteOverCallStream(stream, {"KvGet"});
  CHECK(wrong.CallSync<rpc::KvGetReply>(ORB_RPC(KvGet), rpc::KvGetRequest()).status().code() ==
        absl::StatusCode::kUnauthenticated);
  member.RouteOverCallStream(stream, {"KvGet"});
  CHECK(member.CallSync<rpc::KvGetReply>(ORB_RPC(KvGet), rpc::KvGetRequest()).ok());
  CHECK(member.route_state() == RpcClient<rpc::GcsService>::RouteState::kWorking);

  auto raylet = StartRaylet(dir, gcs->started.address, "s3cret-token");
  RpcClient<rpc::RayletService> raylet_anon(raylet->started.address, "");
  CHECK(raylet_anon.CallSync<rpc::GetNodeStatsReply>(ORB_RPC(GetNodeStats), rpc::GetNodeStatsRequest()).status().code() ==
        absl::StatusCode::kUnauthenticated);
}

namespace {
// The process's peak resident memory (VmHWM), in bytes.
int64_t PeakRss(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}
}  // namespace

TEST_CASE("a huge request is refused before the GCS buffers it: without the token, and over the size cap",
          "[security]") {
  TempDir dir;
  auto gcs = StartGcs(dir, "s3cret-token");
  RpcClient<rpc::GcsService> member(gcs->started.address, "s3cret-token");
  REQUIRE(member.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest()).ok());
  int64_t before = PeakRss(gcs->started.pid);
  rpc::KvPutRequest huge;
  huge.set_key("k");
  huge.set_value(std::string(150 << 20, 'x'));
  CallOptions call;
  call.timeout = std::chrono::seconds(30);
  RpcClient<rpc::GcsService> stranger(gcs->started.address, "");
  auto refused = stranger.CallSync<rpc::KvPutReply>(ORB_RPC(KvPut), huge, call);
  CHECK_FALSE(refused.ok());
  int64_t grown = PeakRss(gcs->started.pid) - before;
  INFO("peak RSS grew by " << grown / (1 << 20) << " MiB: " << refused.status());
  CHECK(grown < (48 << 20));
  // A member's request over the cap (--max-message-bytes, 64 MiB by default) is refused too.
  // (gRPC reads a member's request whole before it can tell it is too big.)
  auto too_big = member.CallSync<rpc::KvPutReply>(ORB_RPC(KvPut), huge, call);
  INFO(too_big.status());
  CHECK(too_big.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(member.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest()).ok());
}

TEST_CASE("corrupt, foreign and unauthenticated gossip is dropped and counted; daemons keep running", "[gossip]") {
  TempDir dir;
  auto gcs = StartGcs(dir, "t");
  auto raylet = StartRaylet(dir, gcs->started.address, "t");
  for (const std::string& address : {gcs->started.address, raylet->started.address}) {
    RpcClient<rpc::GossipService> member(address, "t");
    rpc::DeliverGossipRequest corrupt;
    corrupt.set_message(std::string("\xff\xff\xff\xff\x0f not a message", 20));
    CHECK(member.CallSync<rpc::DeliverGossipReply>(ORB_RPC(DeliverGossip), corrupt).ok());
    rpc::GossipMessage foreign;
    foreign.set_cluster_id("some-other-cluster");
    foreign.set_from_address("127.0.0.1:1");
    foreign.mutable_ping()->set_seq(7);
    rpc::DeliverGossipRequest wrong_cluster;
    wrong_cluster.set_message(foreign.SerializeAsString());
    // Refused so that a member of a lost cluster can tell and rejoin.
    CHECK(member.CallSync<rpc::DeliverGossipReply>(ORB_RPC(DeliverGossip), wrong_cluster).status().code() ==
          absl::StatusCode::kFailedPrecondition);
    RpcClient<rpc::GossipService> stranger(address, "not-the-token");
    CHECK(stranger.CallSync<rpc::DeliverGossipReply>(ORB_RPC(DeliverGossip), corrupt).status().code() ==
          absl::StatusCode::kUnauthenticated);
  }
  RpcClient<rpc::GcsService> g(gcs->started.address, "t");
  auto metrics = [&] {
    auto reply = g.CallSync<rpc::GetMetricsReply>(ORB_RPC(GetMetrics), rpc::GetMetricsRequest());
    REQUIRE(reply.ok());
    return *reply;
  };
  // The raylet's own gossip reaches the GCS within a round or two.
  CHECK(WaitFor([&] { return metrics().metrics().count("gossip_received") && metrics().metrics().at("gossip_received") > 0; },
                std::chrono::seconds(5)));
  auto gcs_metrics = metrics();
  CHECK(gcs_metrics.metrics().at("gossip_dropped_corrupt") == 1);
  CHECK(gcs_metrics.metrics().at("gossip_dropped_wrong_cluster") == 1);
  CHECK(gcs_metrics.metrics().at("rpc_rejected_unauthenticated") == 1);
  RpcClient<rpc::RayletService> r(raylet->started.address, "t");
  auto stats = r.CallSync<rpc::GetNodeStatsReply>(ORB_RPC(GetNodeStats), rpc::GetNodeStatsRequest());
  REQUIRE(stats.ok());
  CHECK(stats->metrics().at("gossip_dropped_corrupt") == 1);
  CHECK(stats->metrics().at("gossip_dropped_wrong_cluster") == 1);
  CHECK(stats->metrics().at("rpc_rejected_unauthenticated") == 1);
  // Both still serve, and the node is still alive in the GCS.
  auto nodes = g.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest());
  REQUIRE(nodes.ok());
  REQUIRE(nodes->nodes_size() == 1);
  CHECK(nodes->nodes(0).state() == rpc::NodeInfo::ALIVE);
}

TEST_CASE("daemons bind to loopback only by default", "[security]") {
  TempDir dir;
  auto gcs = StartGcs(dir, "");
  CHECK(gcs->started.address.rfind("127.0.0.1:", 0) == 0);
}

TEST_CASE("malformed requests get INVALID_ARGUMENT and the daemons keep running", "[errors]") {
  TempDir dir;
  auto gcs = StartGcs(dir, "t");
  auto raylet = StartRaylet(dir, gcs->started.address, "t");
  RpcClient<rpc::GcsService> g(gcs->started.address, "t");
  RpcClient<rpc::RayletService> r(raylet->started.address, "t");

  rpc::RegisterNodeRequest bad_node;
  bad_node.mutable_node()->set_node_id("short");
  CHECK(g.CallSync<rpc::RegisterNodeReply>(ORB_RPC(RegisterNode), bad_node).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(g.CallSync<rpc::KvPutReply>(ORB_RPC(KvPut), rpc::KvPutRequest()).status().code() ==
        absl::StatusCode::kInvalidArgument);

  rpc::CreateObjectRequest bad_object;
  bad_object.set_object_id("x");
  bad_object.set_size(10);
  CHECK(r.CallSync<rpc::CreateObjectReply>(ORB_RPC(CreateObject), bad_object).status().code() ==
        absl::StatusCode::kInvalidArgument);
  rpc::CreateObjectRequest negative;
  negative.set_object_id(ObjectID::FromRandom().Binary());
  negative.set_size(-5);
  CHECK(r.CallSync<rpc::CreateObjectReply>(ORB_RPC(CreateObject), negative).status().code() ==
        absl::StatusCode::kInvalidArgument);
  rpc::CreateObjectRequest huge;
  huge.set_object_id(ObjectID::FromRandom().Binary());
  huge.set_size(1ll << 40);
  auto full = r.CallSync<rpc::CreateObjectReply>(ORB_RPC(CreateObject), huge);
  REQUIRE(full.ok());
  CHECK(full->error().type() == rpc::OBJECT_STORE_FULL);
  rpc::RequestWorkerLeaseRequest no_job;
  CHECK(r.CallSync<rpc::RequestWorkerLeaseReply>(ORB_RPC(RequestWorkerLease), no_job).status().code() ==
        absl::StatusCode::kInvalidArgument);
  rpc::RegisterWorkerRequest stranger;
  stranger.set_worker_id(WorkerID::FromRandom().Binary());
  CHECK(r.CallSync<rpc::RegisterWorkerReply>(ORB_RPC(RegisterWorker), stranger).status().code() ==
        absl::StatusCode::kNotFound);

  CHECK(IsProcessAlive(gcs->started.pid));
  CHECK(IsProcessAlive(raylet->started.pid));
  auto stats = r.CallSync<rpc::GetNodeStatsReply>(ORB_RPC(GetNodeStats), rpc::GetNodeStatsRequest());
  REQUIRE(stats.ok());
  CHECK(stats->resources_total().at("zone_a") == 2);
  CHECK(stats->object_store_used_bytes() == 0);
}

TEST_CASE("a flag with a bad value, or a port in use, exits non-zero saying why", "[errors]") {
  TempDir dir;
  std::string out = (dir.path / "bad.out").string();
  CHECK(RunAndWait({FindOrbBinary("gcs_server"), "--port", "notaport"}, out) != 0);
  CHECK_THAT(*ReadFileToString(out), Catch::Contains("--port"));
  CHECK(RunAndWait({FindOrbBinary("raylet"), "--gcs-address", "127.0.0.1:1", "--resources", "{\"x\": -1}"}, out) != 0);
  CHECK_THAT(*ReadFileToString(out), Catch::Contains("'x'"));
  CHECK(RunAndWait({FindOrbBinary("raylet"), "--gcs-address", "nonsense"}, out) != 0);
  CHECK_THAT(*ReadFileToString(out), Catch::Contains("HOST:PORT"));
  auto gcs = StartGcs(dir, "");
  std::string port = gcs->started.address.substr(gcs->started.address.rfind(':') + 1);
  CHECK(RunAndWait({FindOrbBinary("gcs_server"), "--port", port}, out) != 0);
  CHECK_THAT(*ReadFileToString(out), Catch::Contains("cannot listen"));
}

TEST_CASE("a GCS killed with SIGKILL and restarted keeps jobs and keys; the raylet stays a member", "[faults]") {
  TempDir dir;
  std::string storage = (dir.path / "storage").string();
  auto gcs = StartGcs(dir, "t", storage);
  std::string address = gcs->started.address;
  int port = std::stoi(address.substr(address.rfind(':') + 1));
  auto raylet = StartRaylet(dir, address, "t");
  RpcClient<rpc::GcsService> g(address, "t");

  rpc::KvPutRequest put;
  put.set_namespace_("ns");
  put.set_key("model/checkpoint");
  put.set_value("step-42");
  REQUIRE(g.CallSync<rpc::KvPutReply>(ORB_RPC(KvPut), put)->added());
  rpc::AddJobRequest job;
  job.mutable_job()->set_worker_executable("/bin/true");
  auto added = g.CallSync<rpc::AddJobReply>(ORB_RPC(AddJob), job);
  REQUIRE(added.ok());

  ::kill(gcs->started.pid, SIGKILL);
  ::waitpid(gcs->started.pid, nullptr, 0);
  gcs = StartGcs(dir, "t", storage, port);

  CallOptions retry;
  retry.max_attempts = 20;
  rpc::KvGetRequest get;
  get.set_namespace_("ns");
  get.set_key("model/checkpoint");
  auto value = g.CallSync<rpc::KvGetReply>(ORB_RPC(KvGet), get, retry);
  REQUIRE(value.ok());
  CHECK(value->found());
  CHECK(value->value() == "step-42");
  rpc::KvGetRequest other_ns = get;
  other_ns.set_namespace_("other");
  CHECK_FALSE(g.CallSync<rpc::KvGetReply>(ORB_RPC(KvGet), other_ns)->found());
  auto jobs = g.CallSync<rpc::GetAllJobsReply>(ORB_RPC(GetAllJobs), rpc::GetAllJobsRequest());
  REQUIRE(jobs.ok());
  REQUIRE(jobs->jobs_size() == 1);
  CHECK(jobs->jobs(0).job_id() == added->job_id());
  // New job IDs continue after the old ones.
  auto next = g.CallSync<rpc::AddJobReply>(ORB_RPC(AddJob), job);
  CHECK(JobIDToInt(JobID::FromBinary(next->job_id())) == JobIDToInt(JobID::FromBinary(added->job_id())) + 1);

  // The raylet keeps gossiping with the restarted GCS: it stays alive.
  auto alive_nodes = [&] {
    auto nodes = g.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest());
    int n = 0;
    if (nodes.ok()) {
      for (const auto& node : nodes->nodes()) n += node.state() == rpc::NodeInfo::ALIVE;
    }
    return n;
  };
  // Alive throughout more than the probe interval plus the suspicion timeout.
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(4500);
  bool stayed_alive = true;
  while (stayed_alive && std::chrono::steady_clock::now() < until) {
    stayed_alive = alive_nodes() == 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(stayed_alive);

  // A raylet killed with SIGKILL misses the GCS's probes and is declared dead.
  auto nodes = g.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest());
  REQUIRE(nodes.ok());
  std::string arena = nodes->nodes(0).object_store_path();
  CHECK(fs::exists(arena));
  ::kill(raylet->started.pid, SIGKILL);
  ::waitpid(raylet->started.pid, nullptr, 0);  // reaped, as init would reap an orphan
  CHECK(WaitFor([&] { return alive_nodes() == 0; }, std::chrono::seconds(10)));
  // Its shared-memory file outlives it, until the next raylet on the machine starts.
  CHECK(fs::exists(arena));
  auto successor = StartRaylet(dir, address, "t");
  CHECK_FALSE(fs::exists(arena));
}

namespace {

// One request on the object stream, as raw bytes on a socket: what another node (or
// anyone who can reach the port) sends.
struct StreamConnection {
  explicit StreamConnection(int port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    object_stream::ConfigureSocket(fd, 10);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  }
  ~StreamConnection() { ::close(fd); }
  // Sends a request; returns the status answered (-1: no answer).
  int64_t Ask(const ObjectID& id, uint64_t offset, uint64_t length, const std::string& token, std::string* data) {
    object_stream::RequestHeader request{object_stream::kMagic, object_stream::kVersion,
                                         static_cast<uint32_t>(token.size()), {}, offset, length};
    std::memcpy(request.object_id, id.Binary().data(), object_stream::kObjectIdBytes);
    if (!orb::WriteAll(fd, &request, sizeof(request)) || !orb::WriteAll(fd, token.data(), token.size())) {
      return -1;
    }
    return Answer(data);
  }
  int64_t Answer(std::string* data) {
    object_stream::ResponseHeader response{};
    if (!orb::ReadAll(fd, &response, sizeof(response))) return -1;
    if (response.status == object_stream::kOk && data) {
      data->resize(response.length);
      if (!orb::ReadAll(fd, data->data(), data->size())) return -1;
    }
    return response.status;
  }
  // Closed (or reset, when our unread bytes were still in its buffer) by the raylet.
  bool ClosedByPeer() {
    char byte;
    ssize_t n = ::recv(fd, &byte, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }
  int fd;
};

// A GCS and a raylet with a token, and a sealed 100-byte object in the raylet's store.
struct StreamFixture {
  StreamFixture() {
    gcs = StartGcs(dir, token);
    raylet = StartRaylet(dir, gcs->started.address, token);
    RpcClient<rpc::GcsService> gcs_client(gcs->started.address, token);
    REQUIRE(WaitFor(
        [&] {
          auto nodes = gcs_client.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest());
          if (nodes.ok() && nodes->nodes_size() == 1) port = nodes->nodes(0).object_manager_port();
          return port > 0;
        },
        std::chrono::seconds(10)));
    raylet_client = std::make_unique<RpcClient<rpc::RayletService>>(raylet->started.address, token);
    rpc::CreateObjectRequest create;
    create.set_object_id(id.Binary());
    create.set_size(100);
    REQUIRE(raylet_client->CallSync<rpc::CreateObjectReply>(ORB_RPC(CreateObject), create).ok());
    rpc::SealObjectRequest seal;
    seal.set_object_id(id.Binary());
    REQUIRE(raylet_client->CallSync<rpc::SealObjectReply>(ORB_RPC(SealObject), seal).ok());
  }
  int64_t Metric(const std::string& name) {
    auto stats = raylet_client->CallSync<rpc::GetNodeStatsReply>(ORB_RPC(GetNodeStats), rpc::GetNodeStatsRequest());
    REQUIRE(stats.ok());
    auto it = stats->metrics().find(name);
    return it == stats->metrics().end() ? 0 : it->second;
  }

  TempDir dir;
  const std::string token = "s3cret-token";
  std::unique_ptr<Daemon> gcs, raylet;
  std::unique_ptr<RpcClient<rpc::RayletService>> raylet_client;
  int port = 0;
  ObjectID id = ObjectID::FromRandom();
};

}  // namespace

TEST_CASE("the object stream refuses garbage, strangers and bad ranges, counts them, and keeps serving",
          "[security][objects]") {
  StreamFixture f;
  const std::string& token = f.token;
  int port = f.port;
  ObjectID id = f.id;
  {
    StreamConnection garbage(port);
    std::string junk(64, '\x7f');
    REQUIRE(orb::WriteAll(garbage.fd, junk.data(), junk.size()));
    CHECK(garbage.Answer(nullptr) == object_stream::kMalformed);
    CHECK(garbage.ClosedByPeer());
  }
  {
    StreamConnection stranger(port);
    CHECK(stranger.Ask(id, 0, 100, "wrong-token!", nullptr) == object_stream::kUnauthenticated);
    CHECK(stranger.ClosedByPeer());
  }
  {
    // A member's connection survives requests the raylet refuses, then gets the bytes.
    StreamConnection member(port);
    std::string data;
    CHECK(member.Ask(ObjectID::FromRandom(), 0, 10, token, nullptr) == object_stream::kNotFound);
    CHECK(member.Ask(id, 50, 100, token, nullptr) == object_stream::kOutOfRange);
    CHECK(member.Ask(id, uint64_t{1} << 63, 1, token, nullptr) == object_stream::kOutOfRange);
    CHECK(member.Ask(id, 10, 90, token, &data) == object_stream::kOk);
    CHECK(data.size() == 90);
  }
  CHECK(f.Metric("object_stream_malformed") == 1);
  CHECK(f.Metric("object_stream_rejected_unauthenticated") == 1);
  CHECK(f.Metric("object_chunk_requests_rejected") == 2);
}

TEST_CASE("strangers' idle connections do not crowd members out of the object stream; a full house says busy",
          "[security][objects]") {
  StreamFixture f;
  // 70 connections that never send the token: more than the slots for either kind.
  std::vector<std::unique_ptr<StreamConnection>> strangers;
  for (int i = 0; i < 70; ++i) strangers.push_back(std::make_unique<StreamConnection>(f.port));
  std::string data;
  {
    StreamConnection member(f.port);
    CHECK(member.Ask(f.id, 0, 100, f.token, &data) == object_stream::kOk);
    CHECK(data.size() == 100);
  }
  // Each had 2 s to send its token; the oldest went earlier to make room.
  auto since = std::chrono::steady_clock::now();
  for (auto& stranger : strangers) CHECK(stranger->ClosedByPeer());
  CHECK(std::chrono::steady_clock::now() - since < std::chrono::seconds(5));
  CHECK(f.Metric("object_stream_unauthenticated_evicted") >= 6);
  strangers.clear();

  // Members hold every connection meant for them: the next member is told busy, not
  // that the object is gone, and gets it once a connection is free again.
  std::vector<std::unique_ptr<StreamConnection>> members;
  for (int i = 0; i < 64; ++i) {
    members.push_back(std::make_unique<StreamConnection>(f.port));
    REQUIRE(members.back()->Ask(f.id, 0, 1, f.token, nullptr) == object_stream::kOk);
  }
  {
    StreamConnection late(f.port);
    CHECK(late.Ask(f.id, 0, 100, f.token, nullptr) == object_stream::kBusy);
  }
  CHECK(f.Metric("object_stream_busy") == 1);
  members.pop_back();
  CHECK(WaitFor(
      [&] {
        StreamConnection late(f.port);
        return late.Ask(f.id, 0, 100, f.token, &data) == object_stream::kOk;
      },
      std::chrono::seconds(5)));
}

TEST_CASE("a raylet with calls parked in it stops at once on SIGTERM", "[faults][regression]") {
  // Found by the chaos suite: a node declared dead (frozen, then woken) left on SIGTERM
  // but hung in gRPC's Shutdown, which waited for calls its handlers had parked.
  TempDir dir;
  auto gcs = StartGcs(dir, "t");
  auto raylet = StartRaylet(dir, gcs->started.address, "t");
  RpcClient<rpc::RayletService> r(raylet->started.address, "t");
  rpc::GetObjectsRequest wait_long;
  wait_long.add_object_ids(std::string(20, '\x09'));  // never made: the call waits
  wait_long.set_timeout_ms(600000);
  CallOptions patient;
  patient.timeout = std::chrono::minutes(10);
  std::promise<absl::Status> answered;
  r.Call<rpc::GetObjectsReply>(
      ORB_RPC(GetObjects), wait_long,
      [&answered](const absl::Status& status, rpc::GetObjectsReply&&) { answered.set_value(status); }, patient);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // parked in the raylet
  auto asked = std::chrono::steady_clock::now();
  ::kill(raylet->started.pid, SIGTERM);
  int status = 0;
  REQUIRE(WaitFor([&] { return ::waitpid(raylet->started.pid, &status, WNOHANG) == raylet->started.pid; },
                  std::chrono::seconds(10)));
  CHECK(std::chrono::steady_clock::now() - asked < std::chrono::seconds(5));
  CHECK(WIFEXITED(status));
  CHECK_FALSE(answered.get_future().get().ok());  // the parked call ended, with an error
}
