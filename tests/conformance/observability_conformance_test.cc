// User metrics in the shape of Ray's (Gauge, Counter, Histogram, Sum with tag maps,
// from <orb/api/metric.h> as Ray's <ray/api/metric.h>) recorded in the driver and in
// an actor, and ORBLOG (Ray's RAYLOG) writing to the worker's log with the task's ID.
#include <gtest/gtest.h>
#include <orb/api.h>
#include <orb/api/metric.h>

#include <filesystem>
#include <fstream>

#include "conformance.h"

namespace {

void RecordMetrics(const std::string& exec_type, int rounds) {
  orb::Gauge gauge("orb.test.gauge", "test gauge", "unit", {"tag1", "tag2"});
  orb::Counter counter("orb.test.counter", "test counter", "unit", {"tag1", "tag2"});
  orb::Histogram histogram("orb.test.histogram", "test histogram", "unit", {1, 10}, {"tag1", "tag2"});
  orb::Sum sum("orb.test.sum", "test sum", "unit", {"tag1", "tag2"});
  std::unordered_map<std::string, std::string> increasing = {{"tag1", "increasing"}, {"tag2", exec_type}};
  std::unordered_map<std::string, std::string> steady = {{"tag1", "steady"}, {"tag2", exec_type}};
  for (int i = 0; i < rounds; i++) {
    gauge.Set(i, increasing);
    counter.Inc(i, increasing);
    histogram.Observe(i, increasing);
    sum.Record(i, increasing);
    gauge.Set(1, steady);
    counter.Inc(1, steady);
    histogram.Observe(1, steady);
    sum.Record(1, steady);
  }
}

}  // namespace

class MetricActor {
 public:
  static MetricActor* FactoryCreate() { return new MetricActor(); }
  std::string RecordAndExport(int rounds) {
    RecordMetrics("actor", rounds);
    return orb::metrics::ExportText();
  }
};
ORB_REMOTE(MetricActor::FactoryCreate, &MetricActor::RecordAndExport);

std::string LogFromTask(std::string text) {
  ORBLOG(INFO) << "user line: " << text;
  ORBLOG(WARNING) << "user warning: " << text;
  const char* session = std::getenv("ORB_SESSION_DIR");
  return std::string(session ? session : "") + "|" + orb::GetRuntimeContext().GetTaskId();
}
ORB_REMOTE(LogFromTask);

TEST(ObservabilityConformance, MetricsInTheDriverAndInAnActor) {
  InitForTest();
  auto actor = orb::Actor(MetricActor::FactoryCreate).Remote();
  auto exported = actor.Task(&MetricActor::RecordAndExport).Remote(10);
  RecordMetrics("driver", 10);
  auto mine = orb::metrics::Snapshot();
  bool found = false;
  for (const auto& s : mine) {
    if (s.name == "orb.test.counter" && s.tags.at("tag1") == "increasing" && s.tags.at("tag2") == "driver") {
      EXPECT_EQ(s.value, 45);  // 0 + 1 + ... + 9
      found = true;
    }
  }
  EXPECT_TRUE(found);
  std::string text = *exported.Get(30000);
  EXPECT_NE(text.find("orb_orb_test_counter_total{tag1=\"steady\",tag2=\"actor\"} 10"), std::string::npos) << text;
  EXPECT_NE(text.find("orb_orb_test_histogram_count{tag1=\"increasing\",tag2=\"actor\"} 10"), std::string::npos);
}

TEST(ObservabilityConformance, LoggingToTheWorkersLog) {
  InitForTest();
  ORBLOG(INFO) << "the driver logs to its stderr";
  std::string where = *orb::Task(LogFromTask).Remote("conformance-log-7").Get(30000);
  std::string session = where.substr(0, where.find('|')), task = where.substr(where.find('|') + 1);
  ASSERT_FALSE(session.empty());
  std::string line;
  EXPECT_TRUE(WaitUntil(
      [&] {
        for (const auto& entry : std::filesystem::directory_iterator(session + "/logs")) {
          std::ifstream in(entry.path());
          std::string l;
          while (std::getline(in, l)) {
            if (l.find("user line: conformance-log-7") != std::string::npos) line = l;
          }
        }
        return !line.empty();
      },
      std::chrono::seconds(10)));
  EXPECT_NE(line.find("task " + task), std::string::npos) << line;
  EXPECT_NE(line.find("[info]"), std::string::npos) << line;
}
