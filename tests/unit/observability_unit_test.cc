// The pieces of observability without processes: the Prometheus text writer (checked by
// Prometheus's own parser, promtool), workers' metrics merged by a raylet, the GCS's task
// history (events merged per attempt, bounded, filtered), and state filters.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "common/logging.h"
#include "common/metric_samples.h"
#include "common/prometheus_text.h"
#include "common/state_filter.h"
#include "common/state_rows.h"
#include "gcs/task_event_store.h"

using namespace orb;

namespace {

// promtool's verdict on `text`: its exit status and what it printed.
std::pair<int, std::string> Promtool(const std::string& text) {
  std::string path = "/tmp/orb-promtool-" + std::to_string(::getpid()) + ".txt";
  std::ofstream(path) << text;
  std::string output;
  FILE* p = ::popen(("promtool check metrics < " + path + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p)) output += buf;
  int status = ::pclose(p);
  std::remove(path.c_str());
  return {WEXITSTATUS(status), output};
}

rpc::TaskEvent Event(const std::string& id, rpc::TaskState state, int64_t time_ns, int attempt = 0) {
  rpc::TaskEvent e;
  e.set_task_id(id);
  e.set_attempt(attempt);
  e.set_state(state);
  e.set_time_ns(time_ns);
  e.set_name("f");
  e.set_type("NORMAL_TASK");
  return e;
}

rpc::ListTasksReply List(const gcs::TaskEventStore& store, std::vector<std::string> filters = {}, int limit = 0) {
  rpc::ListTasksRequest request;
  for (auto& f : filters) request.add_filters(f);
  request.set_limit(limit);
  auto reply = store.List(request);
  REQUIRE(reply.ok());
  return *reply;
}

}  // namespace

TEST_CASE("the exposition writer's text passes promtool, with escaped labels and cumulative buckets", "[metrics]") {
  prom::Exposition out;
  out.Gauge("orb_object_store_used_bytes", "bytes \"in\" use\nnow", 42, {{"node_id", "a\"b\\c\nd"}});
  out.Counter("orb_leases_granted_total", "leases granted", 3);
  out.Counter("orb_leases_granted_total", "leases granted", 4);  // merged: counters add
  prom::Series latency;
  latency.labels = {{"method", "PushTasks"}};
  latency.bounds = {0.001, 0.01};
  latency.buckets = {2, 1, 1};
  latency.count = 4;
  latency.value = 0.5;
  out.Histogram("orb_rpc_server_latency_seconds", "latency", latency);
  out.Histogram("orb_rpc_server_latency_seconds", "latency", latency);  // a second worker's
  std::string text = out.Text();
  CHECK_THAT(text, Catch::Contains("orb_object_store_used_bytes{node_id=\"a\\\"b\\\\c\\nd\"} 42"));
  CHECK_THAT(text, Catch::Contains("orb_leases_granted_total 7"));
  CHECK_THAT(text, Catch::Contains("orb_rpc_server_latency_seconds_bucket{method=\"PushTasks\",le=\"0.001\"} 4"));
  CHECK_THAT(text, Catch::Contains("orb_rpc_server_latency_seconds_bucket{method=\"PushTasks\",le=\"0.01\"} 6"));
  CHECK_THAT(text, Catch::Contains("orb_rpc_server_latency_seconds_bucket{method=\"PushTasks\",le=\"+Inf\"} 8"));
  CHECK_THAT(text, Catch::Contains("orb_rpc_server_latency_seconds_count{method=\"PushTasks\"} 8"));
  auto [status, said] = Promtool(text);
  INFO(said);
  CHECK(status == 0);
  // promtool is no rubber stamp: a counter without _total fails its lint.
  prom::Exposition bad;
  bad.Counter("orb_leases_granted", "no suffix", 1);
  CHECK(Promtool(bad.Text()).first != 0);
}

TEST_CASE("workers' samples merge at their raylet: counters add, gauges stay each worker's", "[metrics]") {
  prom::Exposition worker;
  worker.Counter("orb_app_rows_total", "rows", 5, {{"stage", "parse"}});
  worker.Gauge("orb_app_queue", "queue length", 3);
  google::protobuf::RepeatedPtrField<rpc::MetricSample> samples;
  ToSamples(worker, &samples);
  prom::Exposition node;
  for (const auto& s : samples) AddSample(s, {{"worker_id", "w1"}}, &node);
  for (const auto& s : samples) AddSample(s, {{"worker_id", "w2"}}, &node);
  std::string text = node.Text();
  CHECK_THAT(text, Catch::Contains("orb_app_rows_total{stage=\"parse\"} 10"));
  CHECK_THAT(text, Catch::Contains("orb_app_queue{worker_id=\"w1\"} 3"));
  CHECK_THAT(text, Catch::Contains("orb_app_queue{worker_id=\"w2\"} 3"));
  CHECK(Promtool(text).first == 0);
}

TEST_CASE("task events merge per attempt in any order; the state only moves forward", "[tasks]") {
  gcs::TaskEventStore store;
  rpc::AddTaskEventsRequest batch;
  *batch.add_events() = Event("t1", rpc::FINISHED, 300);  // the owner's report came first
  *batch.add_events() = Event("t1", rpc::PENDING_NODE_ASSIGNMENT, 100);
  rpc::TaskEvent run = Event("t1", rpc::RUNNING, 200);
  run.set_worker_pid(42);
  run.set_end_time_ns(290);
  *batch.add_events() = run;
  *batch.add_events() = Event("t2", rpc::PENDING_NODE_ASSIGNMENT, 400);
  rpc::TaskEvent failed = Event("t3", rpc::FAILED, 500);
  failed.mutable_error()->set_type(rpc::TASK_ERROR);
  failed.mutable_error()->set_message("boom");
  *batch.add_events() = failed;
  store.Add(batch);
  auto all = List(store);
  REQUIRE(all.tasks_size() == 3);
  CHECK(all.tasks(0).task_id() == "t3");  // newest first
  const rpc::TaskInfo& t1 = all.tasks(2);
  CHECK(t1.state() == rpc::FINISHED);
  CHECK(t1.worker_pid() == 42);
  CHECK(t1.state_times_ns().at("RUNNING") == 200);
  CHECK(TaskRow(t1)["duration_ms"].get<double>() == Approx(90e-6));
  CHECK(List(store, {"state=failed"}).tasks(0).error().message() == "boom");
  CHECK(List(store, {"state!=FINISHED", "state!=FAILED"}).tasks(0).task_id() == "t2");
  auto limited = List(store, {}, 1);
  CHECK(limited.tasks_size() == 1);
  CHECK(limited.total() == 3);
  rpc::ListTasksRequest bad;
  bad.add_filters("colour=red");
  auto refused = store.List(bad);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("'colour'") && Catch::Contains("task_id"));
  prom::Exposition metrics;
  store.AppendMetrics(&metrics);
  CHECK_THAT(metrics.Text(), Catch::Contains("orb_tasks_finished_total 1") && Catch::Contains("orb_tasks_failed_total 1") &&
                                 Catch::Contains("orb_tasks{state=\"PENDING_NODE_ASSIGNMENT\"} 1"));
}

TEST_CASE("the task history is bounded: finished attempts go first, and are counted", "[tasks]") {
  gcs::TaskEventStore store(/*max_tasks=*/3);
  rpc::AddTaskEventsRequest batch;
  *batch.add_events() = Event("running", rpc::RUNNING, 1);
  for (int i = 0; i < 4; ++i) *batch.add_events() = Event("done" + std::to_string(i), rpc::FINISHED, 10 + i);
  batch.set_dropped(2);  // a sender's own losses
  store.Add(batch);
  auto all = List(store);
  REQUIRE(all.tasks_size() == 3);
  CHECK(all.dropped_events() == 4);
  CHECK(List(store, {"task_id=" + HexOrEmpty("running")}).tasks_size() == 1);
  CHECK(List(store, {"task_id=" + HexOrEmpty("done0")}).tasks_size() == 0);
}

TEST_CASE("state filters name what is wrong with them", "[state]") {
  CHECK_FALSE(ParseStateFilters({"=x"}).ok());
  CHECK_THAT(std::string(ParseStateFilters({"nonsense"}).status().message()), Catch::Contains("key=value"));
  auto filters = ParseStateFilters({"state!=dead", "name = Counter"});
  REQUIRE(filters.ok());
  CHECK(MatchesStateFilters({{"state", "ALIVE"}, {"name", "counter"}}, *filters));
  CHECK_FALSE(MatchesStateFilters({{"state", "DEAD"}, {"name", "counter"}}, *filters));
  CHECK(CheckFilterKeys(*filters, {"state", "name"}).ok());
  CHECK_FALSE(CheckFilterKeys(*filters, {"state"}).ok());
}

TEST_CASE("log lines' IDs become fields of structured logs", "[logging]") {
  auto fields = IdFields("actor 9b3e (Keeper) alive on 1.2.3.4:5 [actor_id=9b3e01 job_id=01000000 worker_id=ab]");
  REQUIRE(fields.size() == 3);
  CHECK(fields[0] == std::make_pair(std::string("actor_id"), std::string("9b3e01")));
  CHECK(fields[1] == std::make_pair(std::string("job_id"), std::string("01000000")));
  CHECK(fields[2].first == "worker_id");
  CHECK(IdFields("no ids here, nor _id= alone, nor x_id=").empty());
}
