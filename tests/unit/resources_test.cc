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
