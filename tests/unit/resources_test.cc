#include <catch2/catch.hpp>
#include <cmath>

#include "common/resources.h"

using orb::ResourceSet;

TEST_CASE("fractional resources add and subtract without drift", "[resources]") {
  ResourceSet total = ResourceSet::FromMap({{"CPU", 1.0}});
  ResourceSet tenth = ResourceSet::FromMap({{"CPU", 0.1}});
  for (int i = 0; i < 10; ++i) {
    REQUIRE(total.Contains(tenth));
    total.Subtract(tenth);
  }
  CHECK(total.Get("CPU") == 0.0);
  CHECK_FALSE(total.Contains(tenth));
}

TEST_CASE("Contains checks every named resource", "[resources]") {
  ResourceSet node = ResourceSet::FromMap({{"CPU", 4}, {"GPU", 1}});
  CHECK(node.Contains(ResourceSet::FromMap({{"CPU", 4}})));
  CHECK_FALSE(node.Contains(ResourceSet::FromMap({{"CPU", 1}, {"accel", 1}})));
  CHECK(node.Contains(ResourceSet()));
}

TEST_CASE("resource JSON is parsed and bad amounts are named", "[resources]") {
  auto ok = ResourceSet::ParseJson(R"({"zone_a": 4, "accel": 0.5})");
  REQUIRE(ok.ok());
  CHECK(ok->Get("zone_a") == 4);
  CHECK(ok->Get("accel") == 0.5);
  auto negative = ResourceSet::ParseJson(R"({"zone_a": -1})");
  CHECK(negative.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(negative.status().message()), Catch::Contains("zone_a"));
  CHECK_FALSE(ResourceSet::ParseJson(R"({"x": "four"})").ok());
  CHECK_FALSE(ResourceSet::ParseJson("not json").ok());
  CHECK_FALSE(ResourceSet::Validate({{"CPU", std::nan("")}}).ok());
}

TEST_CASE("an amount too large to count is refused, and arithmetic never overflows", "[resources][regression]") {
  // Found by the GCS fuzzer: a placement group bundle asking for 1e300 CPUs overflowed
  // the fixed-point amount while bundles were being placed.
  auto refused = ResourceSet::Validate({{"CPU", 1e300}});
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(std::string(refused.message()), Catch::Contains("resource 'CPU' has invalid amount"));
  CHECK(ResourceSet::Validate({{"memory", 64e12}}).ok());  // 64 TB of memory in bytes is fine
  ResourceSet node = ResourceSet::FromMap({{"CPU", 3}});
  node.Subtract(ResourceSet::FromMap({{"CPU", 1e300}}));  // unchecked input: clamped, no UB
  CHECK(node.Get("CPU") == Approx(3 - ResourceSet::kMaxAmount));
  ResourceSet huge = ResourceSet::FromMap({{"CPU", ResourceSet::kMaxAmount}});
  for (int i = 0; i < 1000; ++i) huge.Add(ResourceSet::FromMap({{"CPU", ResourceSet::kMaxAmount}}));
  CHECK(huge.Get("CPU") > 0);  // saturated, not wrapped around
}
