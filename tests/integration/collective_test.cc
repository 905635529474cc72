// Collectives over Gloo between actors of the embedded cluster: every call, every
// dtype, groups made inside members and from the driver, and the failures a user
// meets (mismatched sizes, a rank out of range, an unknown group, a member that dies,
// leaves or never comes), after which the group can be made again.
//
// Members on one machine talk through shared memory; CTest runs this file a second
// time with ORB_COLLECTIVE_SHM=0 (collective_tcp_test) so that TCP, the transport
// between machines, passes the same tests.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "test_cluster.h"

namespace col = orb::collective;

namespace {

class Member {
 public:
  static Member* Create() { return new Member(); }
  bool Init(std::string group, int size, int rank, int timeout_ms) {
    col::InitGroup(group, size, rank, col::Backend::GLOO, std::chrono::milliseconds(timeout_ms));
    return true;
  }
  std::vector<float> AllReduce(std::string group, std::vector<float> v, int op) {
    col::AllReduce(col::View(v), group, static_cast<col::ReduceOp>(op));
    return v;
  }
  std::vector<double> AllReduceF64(std::string group, std::vector<double> v) {
    col::AllReduce(col::View(v), group);
    return v;
  }
  std::vector<int64_t> AllReduceI64(std::string group, std::vector<int64_t> v) {
    col::AllReduce(col::View(v), group, col::ReduceOp::MAX);
    return v;
  }
  std::vector<int32_t> AllReduceI32(std::string group, std::vector<int32_t> v) {
    col::AllReduce(col::View(v), group, col::ReduceOp::MIN);
    return v;
  }
  std::vector<uint8_t> AllReduceU8(std::string group, std::vector<uint8_t> v) {
    col::AllReduce(col::View(v), group);
    return v;
  }
  // 16-bit floats travel as their bits: dtype 2 float16, 3 bfloat16.
  std::vector<uint16_t> AllReduceHalf(std::string group, std::vector<uint16_t> v, int dtype) {
    col::AllReduce({v.data(), v.size(), static_cast<col::DType>(dtype), -1}, group);
    return v;
  }
  std::vector<float> Broadcast(std::string group, std::vector<float> v, int root) {
    col::Broadcast(col::View(v), root, group);
    return v;
  }
  std::vector<float> AllGather(std::string group, std::vector<float> v) {
    std::vector<float> out(v.size() * col::GetWorldSize(group));
    col::AllGather(col::View(v), col::View(out), group);
    return out;
  }
  std::vector<float> ReduceScatter(std::string group, std::vector<float> v) {
    std::vector<float> out(v.size() / col::GetWorldSize(group));
    col::ReduceScatter(col::View(v), col::View(out), group);
    return out;
  }
  std::vector<float> Reduce(std::string group, std::vector<float> v, int root) {
    col::Reduce(col::View(v), root, group, col::ReduceOp::MAX);
    return v;
  }
  bool Send(std::string group, std::vector<float> v, int dst) {
    col::Send(col::View(v), dst, group);
    return true;
  }
  std::vector<float> Recv(std::string group, int count, int src) {
    std::vector<float> v(count);
    col::Recv(col::View(v), src, group);
    return v;
  }
  int Barrier(std::string group) {
    col::Barrier(group);
    return col::GetRank(group);
  }
  int Rank(std::string group) { return col::GetRank(group); }
  bool Destroy(std::string group) {
    col::DestroyGroup(group);
    return true;
  }
  int Die() { std::_Exit(1); }
  // The line of /proc/self/maps that maps a shared-memory segment of a group, or "".
  std::string MappedSegment() {
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
      if (line.find("/orb-col-") != std::string::npos) return line;
    }
    return "";
  }
};
ORB_REMOTE(Member::Create, &Member::Init, &Member::AllReduce, &Member::AllReduceF64, &Member::AllReduceI64,
           &Member::AllReduceI32, &Member::AllReduceU8, &Member::AllReduceHalf, &Member::Broadcast, &Member::AllGather,
           &Member::ReduceScatter, &Member::Reduce, &Member::Send, &Member::Recv, &Member::Barrier, &Member::Rank,
           &Member::Destroy, &Member::Die, &Member::MappedSegment);

using Members = std::vector<orb::ActorHandle<Member>>;

// Two members in group `name`, made inside the members.
Members Pair(const std::string& name, int timeout_ms = 20000) {
  Members m{orb::Actor(Member::Create).Remote(), orb::Actor(Member::Create).Remote()};
  auto a = m[0].Task(&Member::Init).Remote(name, 2, 0, timeout_ms);
  auto b = m[1].Task(&Member::Init).Remote(name, 2, 1, timeout_ms);
  REQUIRE(*a.Get(60000));
  REQUIRE(*b.Get(60000));
  return m;
}

template <class T>
std::vector<T> Both(orb::ObjectRef<T> a, orb::ObjectRef<T> b, T* second) {
  *second = *b.Get(60000);
  return {*a.Get(60000)};
}

uint16_t Bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}
uint16_t F16(float f) {  // exact for small integers
  if (f == 0) return 0;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t exp = ((u >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(((u >> 16) & 0x8000) | (exp << 10) | ((u >> 13) & 0x3ff));
}

}  // namespace

TEST_CASE("AllReduce with each op, and GetRank/GetWorldSize, in a group made inside the members", "[collective]") {
  orb::testing::EnsureCluster();
  auto m = Pair("ops");
  for (auto [op, expected] : std::vector<std::pair<int, float>>{{0, 5}, {1, 6}, {2, 2}, {3, 3}}) {
    auto a = m[0].Task(&Member::AllReduce).Remote("ops", std::vector<float>(100, 2), op);
    auto b = m[1].Task(&Member::AllReduce).Remote("ops", std::vector<float>(100, 3), op);
    CHECK(*a.Get(60000) == std::vector<float>(100, expected));
    CHECK(*b.Get(60000) == std::vector<float>(100, expected));
  }
  CHECK(*m[1].Task(&Member::Rank).Remote("ops").Get() == 1);
}

bool SharedMemoryWanted() {
  const char* shm = std::getenv("ORB_COLLECTIVE_SHM");
  return !(shm && std::string(shm) == "0");
}

TEST_CASE("members on one machine share memory, and its name is gone once they have mapped it", "[collective]") {
  orb::testing::EnsureCluster();
  auto m = Pair("mapped");
  for (auto& member : m) {
    std::string line = *member.Task(&Member::MappedSegment).Remote().Get(60000);
    if (!SharedMemoryWanted()) {
      CHECK(line.empty());
      continue;
    }
    CHECK_THAT(line, Catch::Contains("/dev/shm/orb-col-") && Catch::EndsWith("(deleted)"));
  }
}

TEST_CASE("a large tensor (8 MB, several shared-memory rounds) reduces correctly", "[collective]") {
  orb::testing::EnsureCluster();
  auto m = Pair("large");
  std::vector<float> x(2 << 20), y(2 << 20);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(i % 4096);
    y[i] = static_cast<float>(i % 7);
  }
  auto a = m[0].Task(&Member::AllReduce).Remote("large", x, 0);
  auto b = m[1].Task(&Member::AllReduce).Remote("large", y, 0);
  std::vector<float> sum(x.size());
  for (size_t i = 0; i < x.size(); ++i) sum[i] = x[i] + y[i];
  CHECK(*a.Get(60000) == sum);
  CHECK(*b.Get(60000) == sum);
}

TEST_CASE("every dtype reduces correctly", "[collective]") {
  orb::testing::EnsureCluster();
  auto m = Pair("dtypes");
  auto f64 = m[0].Task(&Member::AllReduceF64).Remote("dtypes", std::vector<double>{1.5, 2});
  m[1].Task(&Member::AllReduceF64).Remote("dtypes", std::vector<double>{2.5, 3});
  CHECK(*f64.Get(60000) == std::vector<double>{4, 5});
  auto i64 = m[0].Task(&Member::AllReduceI64).Remote("dtypes", std::vector<int64_t>{1ll << 40, 7});
  m[1].Task(&Member::AllReduceI64).Remote("dtypes", std::vector<int64_t>{5, 9});
  CHECK(*i64.Get(60000) == std::vector<int64_t>{1ll << 40, 9});
  auto i32 = m[0].Task(&Member::AllReduceI32).Remote("dtypes", std::vector<int32_t>{-4, 7});
  m[1].Task(&Member::AllReduceI32).Remote("dtypes", std::vector<int32_t>{5, -9});
  CHECK(*i32.Get(60000) == std::vector<int32_t>{-4, -9});
  auto u8 = m[0].Task(&Member::AllReduceU8).Remote("dtypes", std::vector<uint8_t>{1, 100});
  m[1].Task(&Member::AllReduceU8).Remote("dtypes", std::vector<uint8_t>{2, 55});
  CHECK(*u8.Get(60000) == std::vector<uint8_t>{3, 155});
  auto bf = m[0].Task(&Member::AllReduceHalf).Remote("dtypes", std::vector<uint16_t>{Bf16(1.5f), Bf16(-2)}, 3);
  m[1].Task(&Member::AllReduceHalf).Remote("dtypes", std::vector<uint16_t>{Bf16(2.5f), Bf16(8)}, 3);
  CHECK(*bf.Get(60000) == std::vector<uint16_t>{Bf16(4), Bf16(6)});
  auto f16 = m[0].Task(&Member::AllReduceHalf).Remote("dtypes", std::vector<uint16_t>{F16(1), F16(3)}, 2);
  m[1].Task(&Member::AllReduceHalf).Remote("dtypes", std::vector<uint16_t>{F16(2), F16(4)}, 2);
  CHECK(*f16.Get(60000) == std::vector<uint16_t>{F16(3), F16(7)});
}

TEST_CASE("Broadcast, AllGather, ReduceScatter, Reduce, Send/Recv and Barrier", "[collective]") {
  orb::testing::EnsureCluster();
  auto m = Pair("calls");
  auto b0 = m[0].Task(&Member::Broadcast).Remote("calls", std::vector<float>{0, 0}, 1);
  auto b1 = m[1].Task(&Member::Broadcast).Remote("calls", std::vector<float>{7, 8}, 1);
  CHECK(*b0.Get(60000) == std::vector<float>{7, 8});
  CHECK(*b1.Get(60000) == std::vector<float>{7, 8});

  auto g0 = m[0].Task(&Member::AllGather).Remote("calls", std::vector<float>{1, 2});
  auto g1 = m[1].Task(&Member::AllGather).Remote("calls", std::vector<float>{3, 4});
  CHECK(*g0.Get(60000) == std::vector<float>{1, 2, 3, 4});
  CHECK(*g1.Get(60000) == std::vector<float>{1, 2, 3, 4});

  auto s0 = m[0].Task(&Member::ReduceScatter).Remote("calls", std::vector<float>{1, 2, 3, 4});
  auto s1 = m[1].Task(&Member::ReduceScatter).Remote("calls", std::vector<float>{10, 20, 30, 40});
  CHECK(*s0.Get(60000) == std::vector<float>{11, 22});
  CHECK(*s1.Get(60000) == std::vector<float>{33, 44});

  auto r0 = m[0].Task(&Member::Reduce).Remote("calls", std::vector<float>{1, 9}, 0);
  auto r1 = m[1].Task(&Member::Reduce).Remote("calls", std::vector<float>{5, 2}, 0);
  CHECK(*r0.Get(60000) == std::vector<float>{5, 9});
  r1.Get(60000);

  auto sent = m[0].Task(&Member::Send).Remote("calls", std::vector<float>{3, 1, 4}, 1);
  auto got = m[1].Task(&Member::Recv).Remote("calls", 3, 0);
  CHECK(*got.Get(60000) == std::vector<float>{3, 1, 4});
  CHECK(*sent.Get(60000));

  auto w0 = m[0].Task(&Member::Barrier).Remote("calls");
  auto w1 = m[1].Task(&Member::Barrier).Remote("calls");
  CHECK(*w0.Get(60000) == 0);
  CHECK(*w1.Get(60000) == 1);
}

TEST_CASE("the calls on tensors past the small-message paths (100k elements)", "[collective]") {
  orb::testing::EnsureCluster();
  auto m = Pair("bigger");
  const size_t n = 100000;
  std::vector<float> ramp(n), ones(n, 1.0f);
  for (size_t i = 0; i < n; ++i) ramp[i] = static_cast<float>(i % 1000);
  auto b0 = m[0].Task(&Member::Broadcast).Remote("bigger", ramp, 0);
  auto b1 = m[1].Task(&Member::Broadcast).Remote("bigger", ones, 0);
  CHECK(*b1.Get(60000) == ramp);
  CHECK(*b0.Get(60000) == ramp);

  auto g0 = m[0].Task(&Member::AllGather).Remote("bigger", ramp);
  auto g1 = m[1].Task(&Member::AllGather).Remote("bigger", ones);
  std::vector<float> gathered = ramp;
  gathered.insert(gathered.end(), ones.begin(), ones.end());
  CHECK(*g0.Get(60000) == gathered);
  CHECK(*g1.Get(60000) == gathered);

  auto s0 = m[0].Task(&Member::ReduceScatter).Remote("bigger", gathered);
  auto s1 = m[1].Task(&Member::ReduceScatter).Remote("bigger", gathered);
  std::vector<float> first(n), second(n);
  for (size_t i = 0; i < n; ++i) {
    first[i] = 2 * ramp[i];
    second[i] = 2;
  }
  CHECK(*s0.Get(60000) == first);
  CHECK(*s1.Get(60000) == second);

  auto r0 = m[0].Task(&Member::Reduce).Remote("bigger", ramp, 1);
  auto r1 = m[1].Task(&Member::Reduce).Remote("bigger", ones, 1);
  std::vector<float> max(n);
  for (size_t i = 0; i < n; ++i) max[i] = std::max(ramp[i], 1.0f);
  CHECK(*r1.Get(60000) == max);
  r0.Get(60000);
}

TEST_CASE("a group made from the driver over actor handles: ranks in handle order", "[collective]") {
  orb::testing::EnsureCluster();
  Members m{orb::Actor(Member::Create).Remote(), orb::Actor(Member::Create).Remote()};
  col::CreateGroup(m, "from-driver", col::Backend::GLOO, std::chrono::seconds(20));
  auto a = m[0].Task(&Member::AllReduce).Remote("from-driver", std::vector<float>{1}, 0);
  auto b = m[1].Task(&Member::AllReduce).Remote("from-driver", std::vector<float>{2}, 0);
  CHECK(*a.Get(60000) == std::vector<float>{3});
  CHECK(*b.Get(60000) == std::vector<float>{3});
  CHECK(*m[0].Task(&Member::Rank).Remote("from-driver").Get() == 0);
  CHECK(*m[1].Task(&Member::Rank).Remote("from-driver").Get() == 1);
}

TEST_CASE("bad input: mismatched sizes or dtypes, a rank out of range, an unknown group", "[collective][errors]") {
  orb::testing::EnsureCluster();
  auto m = Pair("strict");
  auto a = m[0].Task(&Member::AllReduce).Remote("strict", std::vector<float>(4, 1), 0);
  auto b = m[1].Task(&Member::AllReduce).Remote("strict", std::vector<float>(8, 1), 0);
  CHECK_THROWS_WITH(a.Get(60000), Catch::Contains("4 float32") && Catch::Contains("8 float32"));
  CHECK_THROWS_WITH(b.Get(60000), Catch::Contains("4 float32") && Catch::Contains("8 float32"));
  auto c = m[0].Task(&Member::AllReduce).Remote("strict", std::vector<float>(4, 1), 0);
  auto d = m[1].Task(&Member::AllReduceF64).Remote("strict", std::vector<double>(4, 1));
  CHECK_THROWS_WITH(c.Get(60000), Catch::Contains("float64"));
  CHECK_THROWS_WITH(d.Get(60000), Catch::Contains("float32"));
  CHECK_THROWS_WITH(m[0].Task(&Member::Broadcast).Remote("strict", std::vector<float>{1}, 5).Get(60000),
                    Catch::Contains("out of range"));
  CHECK_THROWS_WITH(m[0].Task(&Member::Rank).Remote("no-such-group").Get(60000), Catch::Contains("unknown collective group"));
  CHECK_THROWS_WITH(m[0].Task(&Member::Init).Remote("bad", 2, 2, 1000).Get(60000), Catch::Contains("out of range"));
}

TEST_CASE("a member that dies mid-collective fails the others; the group can be made again", "[collective][faults]") {
  orb::testing::EnsureCluster();
  auto m = Pair("fragile", 5000);
  auto waiting = m[0].Task(&Member::AllReduce).Remote("fragile", std::vector<float>(16, 1), 0);
  m[1].Task(&Member::Die).Remote();
  CHECK_THROWS_WITH(waiting.Get(60000), Catch::Contains("fragile") && Catch::Contains("failed"));
  // Survivors destroy; a new pair re-creates the group under the same name.
  m[0].Task(&Member::Destroy).Remote("fragile").Get(60000);
  auto again = Pair("fragile", 5000);
  auto a = again[0].Task(&Member::AllReduce).Remote("fragile", std::vector<float>{1}, 0);
  auto b = again[1].Task(&Member::AllReduce).Remote("fragile", std::vector<float>{2}, 0);
  CHECK(*a.Get(60000) == std::vector<float>{3});
  CHECK(*b.Get(60000) == std::vector<float>{3});
}

TEST_CASE("a member that leaves (DestroyGroup) mid-collective fails the others at once", "[collective][faults]") {
  orb::testing::EnsureCluster();
  auto m = Pair("leaving", 20000);
  auto start = std::chrono::steady_clock::now();
  auto waiting = m[0].Task(&Member::AllReduce).Remote("leaving", std::vector<float>(16, 1), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // so that rank 0 is waiting (either order must fail)
  m[1].Task(&Member::Destroy).Remote("leaving").Get(60000);
  CHECK_THROWS_WITH(waiting.Get(60000), Catch::Contains("leaving") && Catch::Contains("failed"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(15));  // well before the 20 s timeout
}

TEST_CASE("a member that never comes: the collective fails after the group's timeout", "[collective][faults]") {
  orb::testing::EnsureCluster();
  auto m = Pair("lonely", 1500);
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(m[0].Task(&Member::AllReduce).Remote("lonely", std::vector<float>{1}, 0).Get(60000),
                    Catch::Contains("lonely"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}

TEST_CASE("tensors must match the backend: CPU tensors in NCCL groups, CUDA tensors in Gloo groups fail clearly",
          "[collective][errors]") {
  orb::testing::EnsureCluster();
  // The NCCL backend is a plugin loaded on first use; a one-member group needs no peer.
  col::InitGroup("nccl-solo", 1, 0, col::Backend::NCCL, std::chrono::seconds(10));
  std::vector<float> host(4, 1.0f);
  CHECK_THROWS_WITH(col::AllReduce(col::View(host), "nccl-solo"), Catch::Contains("CUDA device"));
  col::DestroyGroup("nccl-solo");
  col::InitGroup("gloo-solo", 1, 0, col::Backend::GLOO, std::chrono::seconds(10));
  col::Tensor on_gpu{host.data(), host.size(), col::DType::FLOAT32, 0};
  CHECK_THROWS_WITH(col::AllReduce(on_gpu, "gloo-solo"), Catch::Contains("Backend::NCCL"));
  col::AllReduce(col::View(host), "gloo-solo");  // a group of one: the values stay
  CHECK(host == std::vector<float>(4, 1.0f));
  col::DestroyGroup("gloo-solo");
}
