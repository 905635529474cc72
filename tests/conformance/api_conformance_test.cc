// Tasks, objects and errors as Ray C++ programs use them (ray:: renamed orb::):
// Init/Shutdown (twice, with the program's own flags), Put/Get/Wait, ObjectRef
// arguments, tasks returning void, ORB_FUNC overloads, Ray's exception names.
#include <gtest/gtest.h>
#include <orb/api.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "conformance.h"

int Return1() { return 1; }
int Plus1(int x) { return x + 1; }
int Plus(int x, int y) { return x + y; }
std::string Echo(std::string s) { return s; }
std::map<int, std::string> AddEntry(std::map<int, std::string> m) {
  m.emplace(1, "one");
  return m;
}
std::tuple<int, std::string> Swap(std::tuple<std::string, int> t) { return {std::get<1>(t), std::get<0>(t)}; }
void ThrowLogicError() { throw std::logic_error("no luck"); }
int Fails(int x) { throw std::runtime_error("fails on " + std::to_string(x)); }
std::array<int, 1000> Reverse(std::array<int, 1000> a) {
  std::reverse(a.begin(), a.end());
  return a;
}

struct Point {
  double x;
  double y;
  MSGPACK_DEFINE(x, y);
};
Point Mirror(Point p) { return {p.y, p.x}; }

// Overloads that differ only by their parameters (Ray's RAY_FUNC picks one by them).
int Scale() { return 1; }
int Scale(int x) { return x * 10; }
int Scale(int x, int y) { return x * y; }

// A task returning void, whose effect is a file.
void TouchFile(std::string path) {
  if (path.empty()) throw std::invalid_argument("empty path");
  FILE* f = std::fopen(path.c_str(), "w");
  std::fclose(f);
}

ORB_REMOTE(Return1, Plus1, Plus, Echo, AddEntry, Swap, ThrowLogicError, Fails, Reverse, Mirror, TouchFile);
ORB_REMOTE(ORB_FUNC(Scale), ORB_FUNC(Scale, int), ORB_FUNC(Scale, int, int));

TEST(ApiConformance, InitShutdownAndInitAgain) {
  orb::Init(orb::OrbConfig(), cmd_argc, cmd_argv);  // argv holds gtest's leftovers: nulls
  EXPECT_TRUE(orb::IsInitialized());
  std::string job = orb::GetRuntimeContext().GetJobId();
  // A second Init is a no-op, as in Ray (even with a thread running in scope).
  std::thread busy([] { std::this_thread::sleep_for(std::chrono::milliseconds(200)); });
  orb::Init();
  busy.join();
  EXPECT_EQ(orb::GetRuntimeContext().GetJobId(), job);
  orb::Shutdown();
  EXPECT_FALSE(orb::IsInitialized());
  char program[] = "app", mine[] = "--my-own-flag=1", orbs[] = "--orb_namespace=conformance";
  char* argv[] = {program, mine, orbs, nullptr};
  orb::Init(3, argv);
  EXPECT_EQ(orb::GetNamespace(), "conformance");
  orb::Shutdown();
  char typo[] = "--orb-adress=127.0.0.1:1";
  char* bad_argv[] = {program, typo, nullptr};
  EXPECT_THROW(orb::Init(2, bad_argv), orb::internal::OrbException);
  EXPECT_FALSE(orb::IsInitialized());
}

TEST(ApiConformance, PutGetWaitAndTasks) {
  InitForTest();
  auto obj = orb::Put(12345);
  EXPECT_EQ(12345, *orb::Get(obj));
  EXPECT_EQ(12345, *orb::Get(obj, 5000));
  EXPECT_EQ(12345, *obj.Get());
  auto named = orb::Task(Return1).SetName("named_task").SetResources({{"CPU", 1.0}}).Remote();
  EXPECT_EQ(1, *named.Get());
  std::unordered_map<std::string, double> resources{{"CPU", 0.5}};
  EXPECT_EQ(6, *orb::Task(Plus1).SetResources(resources).Remote(5).Get());
  auto r0 = orb::Task(Return1).Remote();
  auto r1 = orb::Task(Plus1).Remote(r0);      // ObjectRef arguments arrive as values
  auto r2 = orb::Task(Plus).Remote(r1, r0);
  std::vector<orb::ObjectRef<int>> refs{r0, r1, r2};
  auto waited = orb::Wait(refs, 3, 10000);
  EXPECT_EQ(waited.ready.size(), 3u);
  EXPECT_EQ(waited.unready.size(), 0u);
  auto values = orb::Get(refs);
  EXPECT_EQ(*values[0] + *values[1] + *values[2], 1 + 2 + 3);
  EXPECT_EQ(*orb::Task(Echo).Remote("hello").Get(), "hello");
  EXPECT_EQ(orb::Task(AddEntry).Remote(std::map<int, std::string>{{0, "zero"}}).Get()->size(), 2u);
  EXPECT_EQ(std::get<0>(*orb::Task(Swap).Remote(std::make_tuple(std::string("a"), 7)).Get()), 7);
  EXPECT_EQ(orb::Task(Mirror).Remote(Point{1, 2}).Get()->x, 2);
  std::array<int, 1000> big{};
  for (int i = 0; i < 1000; ++i) big[i] = i;
  EXPECT_EQ(orb::Task(Reverse).Remote(orb::Put(big)).Get()->front(), 999);
}

TEST(ApiConformance, TasksReturningVoid) {
  InitForTest();
  std::string path = "/tmp/orb-conformance-touch-" + std::to_string(::getpid());
  orb::ObjectRef<void> done = orb::Task(TouchFile).Remote(path);
  done.Get();
  EXPECT_EQ(::access(path.c_str(), F_OK), 0);
  std::remove(path.c_str());
  std::vector<orb::ObjectRef<void>> all{orb::Task(TouchFile).Remote(path), orb::Task(TouchFile).Remote(path)};
  EXPECT_EQ(orb::Wait(all, 2, 10000).ready.size(), 2u);
  orb::Get(all);
  std::remove(path.c_str());
  EXPECT_THROW(orb::Task(TouchFile).Remote("").Get(), orb::internal::OrbTaskException);
}

TEST(ApiConformance, OverloadsByParameterTypes) {
  InitForTest();
  auto r0 = orb::Task(ORB_FUNC(Scale)).Remote();
  auto r1 = orb::Task(ORB_FUNC(Scale, int)).Remote(r0);
  auto r2 = orb::Task(ORB_FUNC(Scale, int, int)).Remote(r1, 3);
  EXPECT_EQ(*r0.Get(), 1);
  EXPECT_EQ(*r1.Get(), 10);
  EXPECT_EQ(*r2.Get(), 30);
}

TEST(ApiConformance, ExceptionsByRaysNames) {
  InitForTest();
  try {
    orb::Task(ThrowLogicError).Remote().Get();
    FAIL() << "expected a task exception";
  } catch (const orb::internal::OrbTaskException& e) {
    EXPECT_NE(std::string(e.what()).find("std::logic_error: no luck"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ThrowLogicError"), std::string::npos) << e.what();
  }
  // A task whose argument failed fails with that error.
  auto failed = orb::Task(Fails).Remote(3);
  EXPECT_THROW(orb::Task(Plus1).Remote(failed).Get(), orb::internal::OrbTaskException);
}

TEST(ApiConformance, GetTimeoutAndUnregisteredFunctions) {
  InitForTest();
  int (*not_registered)(int) = [](int x) { return x; };
  EXPECT_THROW(orb::Task(not_registered), orb::internal::OrbException);
  std::vector<orb::ObjectRef<int>> none;
  EXPECT_TRUE(orb::Wait(none, 0, 10).ready.empty());
}

TEST(ApiConformance, NodesAdvertiseMemoryAndAnObjectStore) {
  InitForTest();
  auto nodes = orb::Nodes();
  ASSERT_FALSE(nodes.empty());
  EXPECT_EQ(nodes.size(), OnStartedCluster() ? 2u : 1u);
  for (const auto& node : nodes) {
    EXPECT_TRUE(node.alive);
    EXPECT_GT(node.resources_total.at("memory"), 0);  // detected, as Ray does
    EXPECT_GT(node.object_store_memory, int64_t(64) << 20);  // a share of memory, not a fixed 512 MiB
  }
}
