#include <catch2/catch.hpp>

#include "orb/api.h"

namespace {
int Mul(int a, int b) { return a * b; }
int Max(int a, int b) { return a > b ? a : b; }
double Max(double a, double b) { return a > b ? a : b; }
ORB_REMOTE(Mul);
ORB_REMOTE(ORB_FUNC(Max, int, int));

class Buf : public orb::internal::ValueBuffer {
 public:
  explicit Buf(std::string s) : s_(std::move(s)) {}
  const char* data() const override { return s_.data(); }
  size_t size() const override { return s_.size(); }

 private:
  std::string s_;
};

std::vector<std::shared_ptr<orb::internal::ValueBuffer>> Args(std::vector<std::string> serialized) {
  std::vector<std::shared_ptr<orb::internal::ValueBuffer>> out;
  for (auto& s : serialized) out.push_back(std::make_shared<Buf>(s));
  return out;
}
}  // namespace

TEST_CASE("ORB_REMOTE names split at top-level commas", "[registry]") {
  auto names = orb::internal::SplitRemoteNames("Plus, &Counter::Add, ORB_FUNC(Max, int, int)");
  REQUIRE(names.size() == 3);
  CHECK(names[0] == "Plus");
  CHECK(names[1] == "Counter::Add");
  CHECK(names[2] == "ORB_FUNC(Max,int,int)");
}

TEST_CASE("a registered function runs on serialized arguments", "[registry]") {
  auto& registry = orb::internal::FunctionRegistry::Instance();
  CHECK(registry.NameOf(orb::internal::FunctionKey(&Mul)) == "Mul");
  const auto* invoker = registry.Find("Mul");
  REQUIRE(invoker);
  using orb::internal::Serialize;
  std::string out = (*invoker)(Args({Serialize(6), Serialize(7)}));
  CHECK(orb::internal::Deserialize<int>(out.data(), out.size()) == 42);
  CHECK_THROWS_AS((*invoker)(Args({Serialize(std::string("x")), Serialize(7)})), orb::internal::ArgumentError);
  CHECK_THROWS_AS((*invoker)(Args({Serialize(1)})), orb::internal::ArgumentError);
  CHECK(registry.Find("ORB_FUNC(Max,int,int)") != nullptr);
  CHECK(registry.Find("Nope") == nullptr);
}

TEST_CASE("a value declaring more elements than it has bytes is refused, not allocated for", "[registry][regression]") {
  // 21 bytes from the value fuzzer: a struct whose map claims 4,282,056,537 entries.
  const unsigned char bytes[] = {0x94, 0x63, 0x92, 0xfd, 0x05, 0xa3, 0x41, 0x62, 0x63, 0x92, 0xfd,
                                 0xdf, 0xff, 0x3a, 0xff, 0x59, 0x29, 0x3f, 0xcd, 0x00, 0x00};
  using Wide = std::tuple<int, std::vector<int>, std::string, std::map<std::string, int>>;
  CHECK_THROWS_AS(orb::internal::Deserialize<Wide>(reinterpret_cast<const char*>(bytes), sizeof(bytes)), orb::Error);
}
