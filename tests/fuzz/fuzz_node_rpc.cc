// Fuzzes the request handling of a node's services over real gRPC: the raylet's
// (RayletService) and a core worker's (CoreWorkerService, served by every driver and
// worker). One node runs in this process for the whole run — a GCS, a raylet and a
// driver (orb::Init) — and each input's requests are sent as raw bytes to the method
// they name, as a member of the cluster could send them. Every request must be answered
// with a status, and the node must keep answering: after each input the raylet and the
// driver are asked for something simple, and the fuzzer stops if they cannot answer.
//
// Input: records (fuzz_input.h) of a method (an index into the raylet's methods, then
// the core worker's, in proto order) and the request bytes.
#include <grpcpp/generic/generic_stub.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "common/rpc_server.h"
#include "core_worker_service.grpc.pb.h"
#include "fuzz_input.h"
#include "gcs/gcs_grpc_service.h"
#include "gcs/gcs_handler.h"
#include "gcs/table_store.h"
#include "gossip/grpc_transport.h"
#include "raylet/raylet.h"
#include "raylet_service.grpc.pb.h"

using namespace orb;

// fuzz_node_driver.cc (apart: the public API and the raylet's headers both name a
// SchedulingStrategy).
std::string StartDriver(const std::string& gcs_address);
bool DriverAnswers();
void StopDriver();

namespace {

const google::protobuf::ServiceDescriptor* Descriptor(const std::string& name) {
  const auto* d = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(name);
  if (!d) std::abort();
  return d;
}

struct Service {
  std::string name;
  std::unique_ptr<grpc::GenericStub> stub;
  std::vector<std::string> methods;  // full paths
};

Service Connect(const std::string& address, const google::protobuf::ServiceDescriptor* descriptor) {
  Service s;
  s.name = descriptor->full_name();
  s.stub = std::make_unique<grpc::GenericStub>(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  for (int i = 0; i < descriptor->method_count(); ++i) {
    s.methods.push_back("/" + descriptor->full_name() + "/" + descriptor->method(i)->name());
  }
  return s;
}

grpc::Status Call(Service& service, const std::string& method, const std::string& bytes, int deadline_ms) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1), response;
  std::promise<grpc::Status> done;
  service.stub->UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                          [&done](grpc::Status status) { done.set_value(std::move(status)); });
  return done.get_future().get();
}

// The node: a GCS and a raylet served from this process, and this process as the driver.
struct Node {
  EventLoop gcs_loop;
  std::unique_ptr<gcs::GcsHandler> gcs;
  std::unique_ptr<gcs::GcsGrpcService> gcs_service;
  std::unique_ptr<gossip::GossipGrpcService> gossip_service;
  std::unique_ptr<gossip::GrpcGossipTransport> gossip_transport;
  StartedServer gcs_server;
  std::unique_ptr<Raylet> raylet;
  Service raylet_rpc, worker_rpc;
  std::string session;

  Node() {
    spdlog::set_level(spdlog::level::off);
    auto handler = gcs::GcsHandler::Create(gcs::NewInMemoryTableStore(), &gcs_loop, gcs::GcsOptions());
    if (!handler.ok()) Die("GCS", handler.status().ToString());
    gcs = std::move(*handler);
    gcs_service = std::make_unique<gcs::GcsGrpcService>(gcs.get(), ServiceContext{&gcs_loop, ""});
    gossip_service = std::make_unique<gossip::GossipGrpcService>(
        [this](const std::string& bytes) { return gcs->DeliverGossip(bytes); }, ServiceContext{&gcs_loop, ""});
    auto server = StartServer("127.0.0.1", 0, {gcs_service.get(), gossip_service.get()});
    if (!server.ok()) Die("GCS server", server.status().ToString());
    gcs_server = std::move(*server);
    std::string gcs_address = "127.0.0.1:" + std::to_string(gcs_server.port);
    gossip_transport = std::make_unique<gossip::GrpcGossipTransport>("", std::chrono::milliseconds(200));
    gcs_loop.Post([this, gcs_address] { gcs->StartGossip(gcs_address, gossip_transport.get()); });
    gcs_loop.Start();

    char session_template[] = "/tmp/orb-fuzz-node.XXXXXX";
    if (!::mkdtemp(session_template)) Die("session", "mkdtemp failed");
    session = session_template;
    RayletOptions options;
    options.gcs_address = gcs_address;
    options.session_dir = session;
    options.object_store_bytes = 32 << 20;
    options.resources = *ResourceSet::ParseJson(R"({"CPU": 2})");
    options.default_worker_path = "/bin/false";
    auto created = Raylet::Create(options);
    if (!created.ok()) Die("raylet", created.status().ToString());
    raylet = std::move(*created);
    if (auto s = raylet->Start(); !s.ok()) Die("raylet start", s.ToString());

    raylet_rpc = Connect("127.0.0.1:" + std::to_string(raylet->port()), Descriptor("orb.rpc.RayletService"));
    worker_rpc = Connect(StartDriver(gcs_address), Descriptor("orb.rpc.CoreWorkerService"));
  }

  // At the end of a run: nothing of the node is left behind (its workers, its arena in
  // /dev/shm, its session directory).
  void Stop() {
    StopDriver();
    raylet->Stop();
    raylet.reset();
    gcs_loop.Stop();
    gcs_loop.Join();
    std::filesystem::remove_all(session);
  }

  [[noreturn]] static void Die(const std::string& what, const std::string& why) {
    fprintf(stderr, "fuzz_node_rpc: cannot start the %s: %s\n", what.c_str(), why.c_str());
    std::abort();
  }
};

Node* node = nullptr;

std::vector<std::string> MethodNames() {
  std::vector<std::string> names;
  for (const auto* d : {Descriptor("orb.rpc.RayletService"), Descriptor("orb.rpc.CoreWorkerService")}) {
    for (int i = 0; i < d->method_count(); ++i) names.push_back(d->method(i)->full_name());
  }
  return names;
}

// Each method once with an empty request, and a few well-formed ones.
std::vector<std::string> Seeds() {
  std::vector<std::string> names = MethodNames();
  std::vector<std::string> seeds;
  for (size_t i = 0; i < names.size(); ++i) seeds.push_back(fuzz::MakeRecord(static_cast<uint8_t>(i), ""));
  auto index = [&](const std::string& name) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return static_cast<uint8_t>(i);
    }
    std::abort();
  };
  rpc::CreateObjectRequest create;
  create.set_object_id(std::string(20, '\x05'));
  create.set_size(1000);
  rpc::SealObjectRequest seal;
  seal.set_object_id(create.object_id());
  rpc::GetObjectsRequest get;
  get.add_object_ids(create.object_id());
  rpc::DeleteObjectsRequest del;
  del.add_object_ids(create.object_id());
  seeds.push_back(fuzz::MakeRecord(index("orb.rpc.RayletService.CreateObject"), create.SerializeAsString()) +
                  fuzz::MakeRecord(index("orb.rpc.RayletService.SealObject"), seal.SerializeAsString()) +
                  fuzz::MakeRecord(index("orb.rpc.RayletService.GetObjects"), get.SerializeAsString()) +
                  fuzz::MakeRecord(index("orb.rpc.RayletService.DeleteObjects"), del.SerializeAsString()));
  rpc::PrepareBundleRequest prepare;
  prepare.set_placement_group_id(std::string(16, '\x06'));
  (*prepare.mutable_resources())["CPU"] = 1;
  seeds.push_back(fuzz::MakeRecord(index("orb.rpc.RayletService.PrepareBundle"), prepare.SerializeAsString()));
  return seeds;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // This binary started as a worker by the raylet (a fuzzed lease): not a worker.
  if (std::getenv("ORB_WORKER_MODE")) std::_Exit(1);
  orb::fuzz::WriteSeedsIfAsked(Seeds);
  node = new Node();
  std::atexit([] { node->Stop(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size_t raylet_methods = node->raylet_rpc.methods.size();
  size_t methods = raylet_methods + node->worker_rpc.methods.size();
  fuzz::RecordReader input(data, size);
  fuzz::Record record;
  for (int i = 0; i < 8 && input.Next(&record); ++i) {
    size_t m = record.target % methods;
    Service& service = m < raylet_methods ? node->raylet_rpc : node->worker_rpc;
    (void)Call(service, service.methods[m < raylet_methods ? m : m - raylet_methods], record.bytes, 2000);
  }
  // The node still answers.
  rpc::GetNodeStatsRequest stats;
  grpc::Status raylet = Call(node->raylet_rpc, "/orb.rpc.RayletService/GetNodeStats", stats.SerializeAsString(), 10000);
  if (!raylet.ok()) {
    fprintf(stderr, "the raylet stopped answering: %s\n", raylet.error_message().c_str());
    std::abort();
  }
  if (!DriverAnswers()) std::abort();
  return 0;
}
