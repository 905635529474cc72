// The Kubernetes client and provider over a scripted HTTP transport: which calls are
// retried and how long it waits, how API errors read, how a watch stream is parsed, how
// a create whose reply was lost is completed without doubling, what a pod holds, and
// how kubeconfig and in-cluster configs are read.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>

#include "k8s_provider/kube_client.h"
#include "k8s_provider/kube_config.h"
#include "k8s_provider/kubernetes_provider.h"
#include "k8s_provider/pod_template.h"

using namespace orb;
using namespace std::chrono_literals;

namespace {

// Answers each request with the next scripted reply (or error) and records it.
class ScriptedTransport : public HttpTransport {
 public:
  struct Step {
    absl::StatusOr<HttpResponse> reply;
    std::function<void(const HttpRequest&)> side_effect;
  };
  std::deque<Step> script;
  std::vector<HttpRequest> seen;
  std::vector<std::string> stream_chunks;  // what Stream delivers
  int stream_status = 200;

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request, std::chrono::milliseconds) override {
    seen.push_back(request);
    if (script.empty()) return absl::InternalError("unscripted request " + request.method + " " + request.path);
    Step step = std::move(script.front());
    script.pop_front();
    if (step.side_effect) step.side_effect(request);
    return step.reply;
  }
  absl::StatusOr<HttpResponse> Stream(const HttpRequest& request, std::chrono::milliseconds,
                                      const std::function<bool(std::string_view)>& on_data) override {
    seen.push_back(request);
    for (const auto& chunk : stream_chunks) {
      if (!on_data(chunk)) break;
    }
    HttpResponse r;
    r.status = stream_status;
    return r;
  }
  void CancelStreams() override {}
};

// Computes each reply when the request arrives.
class ComputedTransport : public HttpTransport {
 public:
  explicit ComputedTransport(std::function<absl::StatusOr<HttpResponse>(const HttpRequest&)> f) : f_(std::move(f)) {}
  absl::StatusOr<HttpResponse> Send(const HttpRequest& r, std::chrono::milliseconds) override { return f_(r); }
  absl::StatusOr<HttpResponse> Stream(const HttpRequest&, std::chrono::milliseconds,
                                      const std::function<bool(std::string_view)>&) override {
    return absl::UnimplementedError("no watch here");
  }
  void CancelStreams() override {}

 private:
  std::function<absl::StatusOr<HttpResponse>(const HttpRequest&)> f_;
};

HttpResponse Reply(int status, const std::string& body, std::map<std::string, std::string> headers = {}) {
  HttpResponse r;
  r.status = status;
  r.body = body;
  r.headers = std::move(headers);
  return r;
}

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                        {"code", code},     {"reason", reason},    {"message", message}}
      .dump();
}

struct Client {
  ScriptedTransport* http = nullptr;
  std::vector<std::chrono::milliseconds> sleeps;
  std::unique_ptr<KubeClient> kube;
  Client() {
    auto t = std::make_unique<ScriptedTransport>();
    http = t.get();
    kube = std::make_unique<KubeClient>(std::move(t), KubeRetryPolicy(),
                                        [this](std::chrono::milliseconds d) { sleeps.push_back(d); });
  }
};

}  // namespace

TEST_CASE("reads are retried on 5xx and broken connections with growing, jittered waits", "[kube_client]") {
  Client c;
  c.http->script.push_back({absl::UnavailableError("connection refused"), nullptr});
  c.http->script.push_back({Reply(500, StatusBody(500, "InternalError", "etcd hiccup")), nullptr});
  c.http->script.push_back({Reply(200, R"({"kind":"PodList","items":[]})"), nullptr});
  auto list = c.kube->Get("/api/v1/namespaces/x/pods");
  REQUIRE(list.ok());
  CHECK((*list)["kind"] == "PodList");
  REQUIRE(c.sleeps.size() == 2);
  CHECK(c.sleeps[0] >= 100ms);  // half of the 200 ms step at least
  CHECK(c.sleeps[0] <= 200ms);
  CHECK(c.sleeps[1] >= 200ms);  // the step doubled
  CHECK(c.sleeps[1] <= 400ms);
}

TEST_CASE("429 waits as long as Retry-After says, capped", "[kube_client]") {
  Client c;
  c.http->script.push_back({Reply(429, StatusBody(429, "TooManyRequests", "slow down"), {{"retry-after", "2"}}), nullptr});
  c.http->script.push_back({Reply(200, "{}"), nullptr});
  REQUIRE(c.kube->Get("/api/v1/pods").ok());
  bool waited_two_seconds = false;
  for (auto d : c.sleeps) waited_two_seconds |= d == 2000ms;
  CHECK(waited_two_seconds);
}

TEST_CASE("a create is not repeated after a failure that may have made the object", "[kube_client]") {
  Client c;
  c.http->script.push_back({Reply(500, StatusBody(500, "InternalError", "timeout storing")), nullptr});
  auto created = c.kube->Create("/api/v1/namespaces/x/pods", {{"kind", "Pod"}});
  REQUIRE_FALSE(created.ok());
  CHECK(created.status().code() == absl::StatusCode::kUnavailable);
  CHECK(HttpStatusOf(created.status()) == 500);
  CHECK(c.http->seen.size() == 1);

  // 429 and 503 say nothing was done: those are retried.
  c.http->script.push_back({Reply(503, StatusBody(503, "ServiceUnavailable", "starting")), nullptr});
  c.http->script.push_back({Reply(201, R"({"metadata":{"name":"p"}})"), nullptr});
  REQUIRE(c.kube->Create("/api/v1/namespaces/x/pods", {{"kind", "Pod"}}).ok());
  CHECK(c.http->seen.size() == 3);
}

TEST_CASE("API errors keep the server's reason and message and map to status codes", "[kube_client]") {
  Client c;
  c.http->script.push_back({Reply(403, StatusBody(403, "Forbidden", "pods is forbidden: User cannot create")), nullptr});
  auto denied = c.kube->Create("/api/v1/namespaces/x/pods", {});
  CHECK(denied.status().code() == absl::StatusCode::kPermissionDenied);
  CHECK(std::string(denied.status().message()).find("pods is forbidden") != std::string::npos);
  c.http->script.push_back({Reply(409, StatusBody(409, "AlreadyExists", "pods \"p\" already exists")), nullptr});
  CHECK(c.kube->Create("/x", {}).status().code() == absl::StatusCode::kAlreadyExists);
  c.http->script.push_back({Reply(409, StatusBody(409, "Conflict", "the object has been modified")), nullptr});
  CHECK(c.kube->MergePatch("/x", {}).status().code() == absl::StatusCode::kAborted);
  c.http->script.push_back({Reply(422, StatusBody(422, "Invalid", "spec.containers: Required value")), nullptr});
  CHECK(c.kube->Create("/x", {}).status().code() == absl::StatusCode::kInvalidArgument);
  c.http->script.push_back({Reply(404, StatusBody(404, "NotFound", "pods \"p\" not found")), nullptr});
  CHECK(c.kube->Delete("/api/v1/namespaces/x/pods/p").ok());  // already gone
}

TEST_CASE("a watch stream is parsed across chunk boundaries; 410 means list again", "[kube_client]") {
  Client c;
  std::string e1 = R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}})";
  std::string e2 = R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})";
  c.http->stream_chunks = {e1.substr(0, 10), e1.substr(10) + "\n" + e2.substr(0, 3), e2.substr(3) + "\n"};
  std::vector<WatchEvent> events;
  REQUIRE(c.kube->Watch("/api/v1/namespaces/x/pods?labelSelector=a%3Db", "4", 30s, [&](const WatchEvent& e) {
                events.push_back(e);
                return true;
              }).ok());
  REQUIRE(events.size() == 2);
  CHECK(events[0].type == "ADDED");
  CHECK(events[1].object["metadata"]["resourceVersion"] == "9");
  const std::string& query = c.http->seen.back().path;
  CHECK(query.find("watch=true") != std::string::npos);
  CHECK(query.find("resourceVersion=4") != std::string::npos);
  CHECK(query.find("labelSelector=a%3Db&") != std::string::npos);

  c.http->stream_chunks = {StatusBody(410, "Expired", "too old resource version: 4 (90)")};
  c.http->stream_chunks[0] = R"({"type":"ERROR","object":)" + c.http->stream_chunks[0] + "}\n";
  absl::Status gone = c.kube->Watch("/api/v1/pods", "4", 30s, [](const WatchEvent&) { return true; });
  CHECK(gone.code() == absl::StatusCode::kOutOfRange);
  CHECK(HttpStatusOf(gone) == 410);
}

TEST_CASE("a create whose reply was lost is completed by listing its launch label, never doubled", "[kubernetes_provider]") {
  KubernetesProviderOptions options;
  options.cluster_name = "demo";
  options.namespace_ = "orb";
  options.watch = false;
  options.pods["cpu_worker"] = {{"spec", {{"containers", {{{"name", "orb"}, {"image", "orb:1"}}}}}}};
  // A server that makes every pod it is sent, but loses the reply to the first create.
  nlohmann::json made = nlohmann::json::array();
  int posts = 0;
  std::vector<std::string> selectors;
  auto server = std::make_unique<ComputedTransport>([&](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
    if (r.method == "GET") {
      selectors.push_back(r.path.substr(r.path.find("labelSelector=") + 14));
      return Reply(200, nlohmann::json{{"kind", "PodList"}, {"metadata", {{"resourceVersion", "1"}}}, {"items", made}}.dump());
    }
    posts++;
    auto pod = nlohmann::json::parse(r.body);
    pod["metadata"]["name"] = "demo-cpu-worker-" + std::to_string(posts);
    made.push_back(pod);
    if (posts == 1) return absl::UnavailableError("connection closed before the reply");
    return Reply(201, pod.dump());
  });
  KubernetesProvider provider(std::make_unique<KubeClient>(std::move(server), KubeRetryPolicy(),
                                                          [](std::chrono::milliseconds) {}),
                              options);
  NodeLaunch launch;
  launch.node_type = "cpu_worker";
  launch.count = 2;
  launch.request_id = "demo-7-xyz";
  REQUIRE(provider.CreateNodes(launch).ok());
  CHECK(posts == 2);  // one reply lost, one more create to make two: none doubled
  CHECK(made.size() == 2);
  REQUIRE_FALSE(selectors.empty());
  CHECK(selectors[0] == UrlEncode("orb.io/cluster=demo,orb.io/launch-request=demo-7-xyz"));
  // Asking again for the same launch makes nothing more.
  REQUIRE(provider.CreateNodes(launch).ok());
  CHECK(posts == 2);
  // The pods carry the labels and a valid generated name.
  const auto& meta = made[0]["metadata"];
  CHECK(meta["generateName"] == "demo-cpu-worker-");
  CHECK(meta["namespace"] == "orb");
  CHECK(meta["labels"]["orb.io/node-type"] == "cpu_worker");
  CHECK(meta["labels"]["orb.io/node-kind"] == "worker");
  CHECK(meta["labels"]["orb.io/launch-request"] == "demo-7-xyz");
  auto listed = provider.ListNodes();
  REQUIRE(listed.ok());
  CHECK(listed->size() == 2);
}

TEST_CASE("a node's pod takes the token from the Secret and its resources as flags and requests", "[pod_template]") {
  OrbPodSpec spec;
  spec.node_type = "gpu_worker";
  spec.resources = {{"CPU", 8}, {"GPU", 1}, {"memory", 34359738368.0}, {"accel", 2}};
  spec.labels = {{"zone", "a"}};
  spec.gcs_address = "10.0.0.5:6379";
  spec.token_secret = "orb-cluster-token";
  nlohmann::json pod = BuildOrbPod(spec);
  const auto& c = pod["spec"]["containers"][0];
  bool token_from_secret = false;
  for (const auto& e : c["env"]) {
    if (e.value("name", "") != "ORB_TOKEN") continue;
    CHECK_FALSE(e.contains("value"));  // never in plain text in the spec
    token_from_secret = e["valueFrom"]["secretKeyRef"]["name"] == "orb-cluster-token";
  }
  CHECK(token_from_secret);
  std::vector<std::string> args = c["args"];
  auto has = [&](const std::string& flag, const std::string& value) {
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == flag && args[i + 1] == value) return true;
    }
    return false;
  };
  CHECK(has("--address", "$(ORB_ADDRESS)"));
  CHECK(has("--num-cpus", "8"));
  CHECK(has("--num-gpus", "1"));
  CHECK(has("--memory", "34359738368"));
  CHECK(has("--resources", R"({"accel":2.0})"));
  CHECK(c["resources"]["limits"]["nvidia.com/gpu"] == "1");
  CHECK(c["resources"]["requests"]["cpu"] == "8");
  CHECK(pod["spec"]["restartPolicy"] == "Never");
  bool shm = false;
  for (const auto& v : pod["spec"]["volumes"]) shm |= v["emptyDir"].value("medium", "") == "Memory";
  CHECK(shm);
}

TEST_CASE("kubeconfig: context, server, token, CA data; in-cluster: the service account", "[kube_config]") {
  auto dir = std::filesystem::temp_directory_path() / ("orb-kubeconfig-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config") << R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://10.1.2.3:6443
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user, namespace: ml}
- name: other
  context: {cluster: missing, user: dev-user}
users:
- name: dev-user
  user: {token: abc123}
- name: exec-user
  user: {exec: {command: aws}}
)";
  auto config = LoadKubeconfigFile((dir / "config").string());
  REQUIRE(config.ok());
  CHECK(config->server == "https://10.1.2.3:6443");
  CHECK(config->bearer_token == "abc123");
  CHECK(config->namespace_ == "ml");
  CHECK(config->ca_pem == "-----BEGIN CERTIFICATE-----\n");
  auto missing = LoadKubeconfigFile((dir / "config").string(), "other");
  REQUIRE_FALSE(missing.ok());
  CHECK(std::string(missing.status().message()).find("names no cluster") != std::string::npos);
  CHECK_FALSE(LoadKubeconfigFile((dir / "config").string(), "nope").ok());

  std::filesystem::create_directories(dir / "sa");
  std::ofstream(dir / "sa" / "token") << "sa-token\n";
  std::ofstream(dir / "sa" / "namespace") << "orb";
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto in_cluster = LoadInClusterKubeConfig((dir / "sa").string());
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  REQUIRE(in_cluster.ok());
  CHECK(in_cluster->server == "https://10.96.0.1:443");
  CHECK(in_cluster->bearer_token == "sa-token");
  CHECK(in_cluster->namespace_ == "orb");
  CHECK(LoadInClusterKubeConfig((dir / "sa").string()).status().code() == absl::StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a pending pod says why it is not running", "[k8s]") {
  auto pod = [](nlohmann::json status) {
    return nlohmann::json{{"metadata", {{"name", "p"}, {"labels", {{"orb.io/node-type", "cpu_worker"}}}}},
                          {"status", std::move(status)}};
  };
  auto pull = ProviderNodeFromPod(pod({{"phase", "Pending"},
                                       {"containerStatuses",
                                        {{{"name", "orb"},
                                          {"state", {{"waiting", {{"reason", "ImagePullBackOff"},
                                                                  {"message", "Back-off pulling image \"orb:nope\""}}}}}}}}}));
  REQUIRE(pull);
  CHECK(pull->state == ProviderNodeState::kPending);
  CHECK(pull->reason == "ImagePullBackOff: Back-off pulling image \"orb:nope\"");
  auto unschedulable = ProviderNodeFromPod(
      pod({{"phase", "Pending"},
           {"conditions", {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"},
                            {"message", "0/3 nodes are available: 3 Insufficient cpu."}}}}}));
  CHECK(unschedulable->reason == "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.");
  // Being created is not a reason to report.
  auto creating = ProviderNodeFromPod(
      pod({{"phase", "Pending"}, {"containerStatuses", {{{"state", {{"waiting", {{"reason", "ContainerCreating"}}}}}}}}}));
  CHECK(creating->reason.empty());
  CHECK(ProviderNodeFromPod(pod({{"phase", "Running"}}))->reason.empty());
}
