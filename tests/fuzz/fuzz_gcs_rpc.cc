// Fuzzes the GCS's request handling: request bytes routed exactly as gcs_server routes
// them (GcsGrpcService: parse, then the handler on the GCS's event loop), on a fresh GCS
// with in-memory tables per input. Any bytes must end in a reply with a status — never
// crash the GCS, overflow, or leave it unable to answer the next call.
//
// Input: records (fuzz_input.h) of a method (an index into the service's method paths,
// in sorted order) and the request bytes.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "fuzz_input.h"
#include "gcs/gcs_grpc_service.h"
#include "gcs/gcs_handler.h"
#include "gcs/table_store.h"
#include "refusing_port.h"

using namespace orb;
using namespace orb::gcs;

namespace {

// A registration the handler would take, pointed at the refusing port.
std::string ToLoopback(const std::string& bytes) {
  rpc::RegisterNodeRequest request;
  if (!request.ParseFromString(bytes) || request.node().raylet_port() < 1 || request.node().raylet_port() > 65535) {
    return bytes;
  }
  request.mutable_node()->set_ip("127.0.0.1");
  request.mutable_node()->set_raylet_port(orb::testing::RefusingPort());
  if (request.node().call_stream_port() != 0) request.mutable_node()->set_call_stream_port(orb::testing::RefusingPort());
  return request.SerializeAsString();
}

void RunOnLoop(EventLoop& loop, std::function<void()> fn) {
  std::promise<void> done;
  loop.Post([&] {
    fn();
    done.set_value();
  });
  done.get_future().wait();
}

std::vector<std::string> MethodPaths() {
  GcsOptions options;
  EventLoop loop;
  auto handler = GcsHandler::Create(NewInMemoryTableStore(), &loop, options);
  if (!handler.ok()) std::abort();
  return GcsGrpcService(handler->get(), ServiceContext{&loop, ""}).paths();
}

// A few sessions of well-formed calls.
std::vector<std::string> Seeds() {
  std::vector<std::string> paths = MethodPaths();
  auto record = [&](const std::string& method, const google::protobuf::Message& request) {
    for (size_t i = 0; i < paths.size(); ++i) {
      if (paths[i] == "/orb.rpc.GcsService/" + method) {
        return fuzz::MakeRecord(static_cast<uint8_t>(i), request.SerializeAsString());
      }
    }
    std::abort();
  };
  rpc::RegisterNodeRequest node;
  node.mutable_node()->set_node_id(std::string(16, '\x11'));
  node.mutable_node()->set_ip("10.0.0.2");
  node.mutable_node()->set_raylet_port(4000);
  (*node.mutable_node()->mutable_resources_total())["CPU"] = 4;
  (*node.mutable_node()->mutable_resources_available())["CPU"] = 4;
  rpc::AddJobRequest job;
  job.mutable_job()->set_driver_ip("10.0.0.2");
  job.mutable_job()->set_namespace_("ns");
  rpc::KvPutRequest put;
  put.set_namespace_("ns");
  put.set_key("k/1");
  put.set_value("v");
  rpc::KvGetRequest get;
  get.set_namespace_("ns");
  get.set_key("k/1");
  rpc::KvKeysRequest keys;
  keys.set_namespace_("ns");
  keys.set_prefix("k/");
  rpc::KvDeleteRequest del;
  del.set_namespace_("ns");
  del.set_key("k/");
  del.set_by_prefix(true);
  rpc::RegisterActorRequest actor;
  actor.mutable_actor()->set_actor_id(std::string(16, '\x22'));
  actor.mutable_actor()->set_job_id(std::string(4, '\x00') + std::string(1, '\x01'));
  actor.mutable_actor()->set_name("counter");
  actor.mutable_actor()->set_namespace_("ns");
  actor.mutable_actor()->set_max_restarts(1);
  actor.mutable_actor()->mutable_creation_spec()->set_function_name("Counter::Create");
  (*actor.mutable_actor()->mutable_creation_spec()->mutable_resources())["CPU"] = 1;
  rpc::GetActorInfoRequest actor_info;
  actor_info.set_actor_id(actor.actor().actor_id());
  actor_info.set_after_version(-1);
  rpc::GetNamedActorRequest named;
  named.set_name("counter");
  named.set_namespace_("ns");
  rpc::KillActorRequest kill;
  kill.set_actor_id(actor.actor().actor_id());
  rpc::CreatePlacementGroupRequest group;
  group.mutable_placement_group()->set_placement_group_id(std::string(16, '\x33'));
  group.mutable_placement_group()->set_strategy(rpc::PlacementGroupInfo::SPREAD);
  for (int i = 0; i < 2; ++i) (*group.mutable_placement_group()->add_bundles()->mutable_resources())["CPU"] = 1;
  rpc::GetPlacementGroupRequest group_info;
  group_info.set_placement_group_id(group.placement_group().placement_group_id());
  rpc::RemovePlacementGroupRequest remove;
  remove.set_placement_group_id(group.placement_group().placement_group_id());
  rpc::PollRequest poll;
  poll.set_wait_ms(0);
  rpc::UnregisterNodeRequest unregister;
  unregister.set_node_id(node.node().node_id());
  unregister.set_reason("fuzz");

  return {
      record("RegisterNode", node) + record("GetAllNodes", rpc::GetAllNodesRequest()) + record("GetMetrics", rpc::GetMetricsRequest()),
      record("AddJob", job) + record("GetAllJobs", rpc::GetAllJobsRequest()) + record("MarkJobFinished", rpc::MarkJobFinishedRequest()),
      record("KvPut", put) + record("KvGet", get) + record("KvKeys", keys) + record("KvDelete", del),
      record("RegisterNode", node) + record("AddJob", job) + record("RegisterActor", actor) +
          record("GetActorInfo", actor_info) + record("GetNamedActor", named) + record("ListActors", rpc::ListActorsRequest()) +
          record("KillActor", kill),
      record("RegisterNode", node) + record("CreatePlacementGroup", group) + record("GetPlacementGroup", group_info) +
          record("ListPlacementGroups", rpc::ListPlacementGroupsRequest()) + record("RemovePlacementGroup", remove),
      record("Poll", poll) + record("RegisterNode", node) + record("UnregisterNode", unregister) + record("Poll", poll),
  };
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) { return orb::fuzz::WriteSeedsIfAsked(Seeds); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  EventLoop loop;
  loop.Start();
  GcsOptions options;
  auto handler = GcsHandler::Create(NewInMemoryTableStore(), &loop, options);
  if (!handler.ok()) std::abort();
  auto service = std::make_unique<GcsGrpcService>(handler->get(), ServiceContext{&loop, ""});
  std::vector<std::string> paths = service->paths();

  fuzz::RecordReader input(data, size);
  fuzz::Record record;
  for (int i = 0; i < 16 && input.Next(&record); ++i) {
    const std::string& path = paths[record.target % paths.size()];
    if (path == "/orb.rpc.GcsService/RegisterNode") record.bytes = ToLoopback(record.bytes);
    grpc::Slice slice(record.bytes);
    grpc::ByteBuffer request(&slice, 1);
    (*service->Find(path))(&request, [](grpc::Status, grpc::ByteBuffer) {});
  }
  // The GCS still answers, and lets go of every call it parked.
  std::promise<grpc::Status> answered;
  grpc::Slice empty(std::string{});
  grpc::ByteBuffer probe(&empty, 1);
  (*service->Find("/orb.rpc.GcsService/GetAllNodes"))(
      &probe, [&answered](grpc::Status status, grpc::ByteBuffer) { answered.set_value(status); });
  if (!answered.get_future().get().ok()) std::abort();
  RunOnLoop(loop, [&] { (*handler)->AnswerParkedCalls(); });
  loop.Stop();
  loop.Join();
  service.reset();
  handler->reset();
  return 0;
}
