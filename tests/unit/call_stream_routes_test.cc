// A gRPC service's methods over the call stream (common/call_stream_routes.h) and
// RpcClient's routing of chosen methods there: the GCS's real service on an in-memory
// store, reached by its gRPC route names; what a caller sees for an unknown method, a
// malformed route, an oversized request, a wrong token; and the fall back to gRPC when
// the stream cannot be reached.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <string>

#include "common/call_stream_client.h"
#include "common/call_stream_protocol.h"
#include "common/call_stream_routes.h"
#include "common/event_loop.h"
#include "common/rpc.h"
#include "common/rpc_server.h"
#include "gcs/gcs_grpc_service.h"
#include "gcs/gcs_handler.h"
#include "gcs/table_store.h"
#include "refusing_port.h"

using namespace orb;
namespace cs = orb::call_stream;

namespace {

constexpr char kToken[] = "secret";
const std::set<std::string, std::less<>> kKv = {"KvPut", "KvGet"};

// A GCS (in-memory store) served over gRPC and over the call stream.
class Gcs {
 public:
  explicit Gcs(ServerLimits limits = {}) {
    loop_.Start();
    auto handler = gcs::GcsHandler::Create(gcs::NewInMemoryTableStore(), &loop_, gcs::GcsOptions());
    REQUIRE(handler.ok());
    handler_ = std::move(*handler);
    service_ = std::make_unique<gcs::GcsGrpcService>(handler_.get(), ServiceContext{&loop_, kToken});
    auto grpc_server = StartServer("127.0.0.1", 0, {service_.get()}, "", limits);
    REQUIRE(grpc_server.ok());
    grpc_ = std::move(*grpc_server);
    auto routes = RouteStreamServer::Start("127.0.0.1", {service_.get()}, kToken, limits);
    REQUIRE(routes.ok());
    routes_ = std::move(*routes);
  }
  ~Gcs() {
    grpc_.server->Shutdown(std::chrono::system_clock::now());
    routes_.reset();
    loop_.Stop();
    loop_.Join();
  }
  std::string grpc_address() const { return "127.0.0.1:" + std::to_string(grpc_.port); }
  std::string stream_endpoint() const { return "127.0.0.1:" + std::to_string(routes_->port()); }

 private:
  EventLoop loop_;
  std::unique_ptr<gcs::GcsHandler> handler_;
  std::unique_ptr<gcs::GcsGrpcService> service_;
  StartedServer grpc_;
  std::unique_ptr<RouteStreamServer> routes_;
};

// One raw call-stream call: the status and reply bytes.
std::pair<absl::Status, std::string> RawCall(const std::string& endpoint, const std::string& token, uint8_t method,
                                             const std::string& payload) {
  CallStreamClient client(endpoint, token);
  std::promise<std::pair<absl::Status, std::string>> answer;
  client.Call(method, payload, [&answer](const absl::Status& status, std::string_view reply) {
    answer.set_value({status, std::string(reply)});
  });
  auto future = answer.get_future();
  REQUIRE(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  return future.get();
}

void Put(RpcClient<rpc::GcsService>& client, const std::string& key, const std::string& value,
         CallOptions options = {}) {
  rpc::KvPutRequest put;
  put.set_key(key);
  put.set_value(value);
  auto reply = client.CallSync<rpc::KvPutReply>(ORB_RPC(KvPut), put, options);
  REQUIRE(reply.ok());
}

std::string Get(RpcClient<rpc::GcsService>& client, const std::string& key) {
  rpc::KvGetRequest get;
  get.set_key(key);
  auto reply = client.CallSync<rpc::KvGetReply>(ORB_RPC(KvGet), get);
  REQUIRE(reply.ok());
  return reply->found() ? reply->value() : "<missing>";
}

}  // namespace

TEST_CASE("routed calls go over the call stream and answer as over gRPC", "[call_stream_routes]") {
  Gcs gcs;
  // The gRPC address refuses connections: only the stream can answer.
  RpcClient<rpc::GcsService> client("127.0.0.1:" + std::to_string(orb::testing::RefusingPort()), kToken);
  client.RouteOverCallStream(gcs.stream_endpoint(), kKv);
  Put(client, "k", "over the stream");
  CHECK(Get(client, "k") == "over the stream");
  CHECK(client.route_state() == RpcClient<rpc::GcsService>::RouteState::kWorking);
  // A method not routed still goes to gRPC (and so fails here).
  CallOptions once;
  once.timeout = std::chrono::seconds(2);
  auto nodes = client.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest(), once);
  CHECK(nodes.status().code() == absl::StatusCode::kUnavailable);
}

TEST_CASE("a stream that cannot be reached leaves the calls to gRPC", "[call_stream_routes]") {
  Gcs gcs;
  RpcClient<rpc::GcsService> client(gcs.grpc_address(), kToken);
  client.RouteOverCallStream("127.0.0.1:" + std::to_string(orb::testing::RefusingPort()), kKv);
  Put(client, "k", "v");  // not retried, yet it falls back: the stream never answered
  CHECK(client.route_state() == RpcClient<rpc::GcsService>::RouteState::kNeverWorked);
  CHECK(Get(client, "k") == "v");
}

TEST_CASE("the stream's errors name the cause and the server goes on serving", "[call_stream_routes]") {
  ServerLimits limits;
  limits.max_message_bytes = 1024;
  Gcs gcs(limits);
  auto [unknown, reply1] = RawCall(gcs.stream_endpoint(), kToken, cs::kRoute,
                                   cs::EncodeRoute("/orb.rpc.GcsService/NoSuchMethod", ""));
  CHECK(unknown.code() == absl::StatusCode::kUnimplemented);
  CHECK(std::string(unknown.message()).find("/orb.rpc.GcsService/NoSuchMethod") != std::string::npos);

  std::string short_route("\x40\x00/orb", 6);  // declares a 64-byte path, carries 4
  auto [malformed, reply2] = RawCall(gcs.stream_endpoint(), kToken, cs::kRoute, short_route);
  CHECK(malformed.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(malformed.message()).find("malformed route") != std::string::npos);

  auto [not_proto, reply3] =
      RawCall(gcs.stream_endpoint(), kToken, cs::kRoute, cs::EncodeRoute("/orb.rpc.GcsService/KvGet", "\xff\xff\xff"));
  CHECK(not_proto.code() == absl::StatusCode::kInvalidArgument);

  rpc::KvPutRequest big;
  big.set_key("big");
  big.set_value(std::string(4096, 'x'));
  auto [too_big, reply4] = RawCall(gcs.stream_endpoint(), kToken, cs::kRoute,
                                   cs::EncodeRoute("/orb.rpc.GcsService/KvPut", big.SerializeAsString()));
  CHECK(too_big.code() == absl::StatusCode::kResourceExhausted);
  CHECK(std::string(too_big.message()).find("limit of 1024") != std::string::npos);

  auto [wrong_token, reply5] = RawCall(gcs.stream_endpoint(), "not the token", cs::kRoute,
                                       cs::EncodeRoute("/orb.rpc.GcsService/KvKeys", ""));
  CHECK(wrong_token.code() == absl::StatusCode::kUnauthenticated);

  auto [other_method, reply6] = RawCall(gcs.stream_endpoint(), kToken, cs::kPushTasks, "");
  CHECK(other_method.code() == absl::StatusCode::kInvalidArgument);

  // Still serving.
  RpcClient<rpc::GcsService> client(gcs.grpc_address(), kToken);
  client.RouteOverCallStream(gcs.stream_endpoint(), kKv);
  Put(client, "after", "errors");
  CHECK(Get(client, "after") == "errors");
  CHECK(client.route_state() == RpcClient<rpc::GcsService>::RouteState::kWorking);
}

TEST_CASE("a route payload is decoded only when it holds the path it declares", "[call_stream_routes]") {
  std::string_view path, request;
  std::string whole = cs::EncodeRoute("/a/b", "body");
  REQUIRE(cs::DecodeRoute(whole, &path, &request));
  CHECK(path == "/a/b");
  CHECK(request == "body");
  CHECK_FALSE(cs::DecodeRoute(std::string_view(whole.data(), 1), &path, &request));
  CHECK_FALSE(cs::DecodeRoute(std::string_view(whole.data(), 5), &path, &request));
  REQUIRE(cs::DecodeRoute(std::string_view(whole.data(), 6), &path, &request));
  CHECK(request.empty());
}

TEST_CASE("a call stream is sought beside numeric addresses only", "[call_stream_routes]") {
  CHECK(CallStreamBeside("10.0.0.7:6379", 41000) == "10.0.0.7:41000");
  CHECK(CallStreamBeside("[::1]:6379", 41000) == "[::1]:41000");
  CHECK(CallStreamBeside("orb-head.default.svc:6379", 41000).empty());  // a Service may forward only 6379
  CHECK(CallStreamBeside("10.0.0.7:6379", 0).empty());
  CHECK(CallStreamBeside("no-port", 41000).empty());
}
