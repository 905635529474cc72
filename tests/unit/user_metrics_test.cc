// User metrics (<orb/metric.h>): values by tags, sharing by name, the errors a user
// would make, and the Prometheus text they export.
#include <catch2/catch.hpp>

#include "orb/errors.h"
#include "orb/metric.h"

namespace {

const orb::metrics::Sample* Find(const std::vector<orb::metrics::Sample>& samples, const std::string& name,
                                 const orb::metrics::Tags& tags) {
  for (const auto& s : samples) {
    if (s.name == name && s.tags == tags) return &s;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("gauges, counters, sums and histograms keep values per tag set", "[metrics]") {
  orb::Gauge gauge("test.gauge", "a gauge", "items", {"tag1", "tag2"});
  orb::Counter counter("test.counter", "a counter", "calls", {"tag1"});
  orb::Sum sum("test.sum", "a sum", "bytes", {"tag1"});
  orb::Histogram histogram("test.histogram", "a histogram", "ms", {1, 10}, {"tag1"});
  for (int i = 1; i <= 3; ++i) {
    gauge.Set(i, {{"tag1", "a"}, {"tag2", "b"}});
    counter.Inc(i, {{"tag1", "a"}});
    sum.Record(-i, {{"tag1", "a"}});
    histogram.Observe(i * 4, {{"tag1", "a"}});  // 4, 8, 12
  }
  counter.Inc();  // no tags: a series of its own
  auto samples = orb::metrics::Snapshot();
  const auto* g = Find(samples, "test.gauge", {{"tag1", "a"}, {"tag2", "b"}});
  REQUIRE(g);
  CHECK(g->value == 3);
  const auto* c = Find(samples, "test.counter", {{"tag1", "a"}});
  REQUIRE(c);
  CHECK(c->value == 6);
  const auto* untagged = Find(samples, "test.counter", {{"tag1", ""}});
  REQUIRE(untagged);
  CHECK(untagged->value == 1);
  const auto* s = Find(samples, "test.sum", {{"tag1", "a"}});
  REQUIRE(s);
  CHECK(s->value == -6);
  const auto* h = Find(samples, "test.histogram", {{"tag1", "a"}});
  REQUIRE(h);
  CHECK(h->count == 3);
  CHECK(h->value == 24);
  CHECK(h->bucket_counts == std::vector<uint64_t>{0, 2, 1});  // <=1, <=10, above
  CHECK(gauge.GetName() == "test.gauge");

  // A metric made again by name shares its values.
  orb::Counter again("test.counter", "a counter", "calls", {"tag1"});
  again.Inc(4, {{"tag1", "a"}});
  CHECK(Find(orb::metrics::Snapshot(), "test.counter", {{"tag1", "a"}})->value == 10);
}

TEST_CASE("metric misuse is a clear orb::Error", "[metrics][errors]") {
  orb::Counter counter("test.strict", "", "", {"k"});
  CHECK_THROWS_WITH(counter.Inc(-1, {{"k", "v"}}), Catch::Contains("cannot go down"));
  CHECK_THROWS_WITH(counter.Inc(1, {{"other", "v"}}), Catch::Contains("no tag key 'other'"));
  CHECK_THROWS_WITH(orb::Gauge("test.strict", "", ""), Catch::Contains("already a counter"));
  CHECK_THROWS_AS(orb::Gauge("1bad name", "", ""), orb::Error);
  CHECK_THROWS_WITH(orb::Histogram("test.bad_bounds", "", "", {10, 1}), Catch::Contains("increase"));
}

TEST_CASE("metrics export as Prometheus text", "[metrics]") {
  orb::Histogram latency("test.latency", "request latency", "ms", {1, 10}, {"route"});
  latency.Observe(5, {{"route", "/p\"q"}});
  orb::Counter requests("test.requests", "requests served", "", {"route"});
  requests.Inc(2, {{"route", "/p"}});
  std::string text = orb::metrics::ExportText();
  CHECK_THAT(text, Catch::Contains("# TYPE orb_test_latency histogram"));
  CHECK_THAT(text, Catch::Contains("orb_test_latency_bucket{route=\"/p\\\"q\",le=\"1\"} 0"));
  CHECK_THAT(text, Catch::Contains("orb_test_latency_bucket{route=\"/p\\\"q\",le=\"10\"} 1"));
  CHECK_THAT(text, Catch::Contains("orb_test_latency_bucket{route=\"/p\\\"q\",le=\"+Inf\"} 1"));
  CHECK_THAT(text, Catch::Contains("orb_test_latency_count{route=\"/p\\\"q\"} 1"));
  CHECK_THAT(text, Catch::Contains("# TYPE orb_test_requests_total counter"));
  CHECK_THAT(text, Catch::Contains("orb_test_requests_total{route=\"/p\"} 2"));
}
