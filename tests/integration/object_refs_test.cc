// ObjectRefs as values: task and actor parameters that are refs, refs inside
// containers and other objects, refs returned by tasks, refs kept in an actor's state
// after their creator let go (the borrower protocol), on the embedded cluster.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <numeric>
#include <thread>

#include "test_cluster.h"

namespace {

std::string GetVal(orb::ObjectRef<std::string> ref) { return *ref.Get(); }
int GetIntVal(orb::ObjectRef<orb::ObjectRef<int>> ref) {
  orb::ObjectRef<int> inner = *ref.Get();
  return *inner.Get();
}
int64_t SumAll(int bias, std::vector<orb::ObjectRef<int64_t>> refs) {
  int64_t total = bias;
  for (const auto& v : orb::Get(refs)) total += *v;
  return total;
}
// Makes an object in this worker and returns the reference: the caller borrows it.
orb::ObjectRef<std::vector<int64_t>> MakeInWorker(int64_t n) {
  std::vector<int64_t> values(n);
  std::iota(values.begin(), values.end(), 1);
  return orb::Put(values);
}
// Returns a ref it was given (owned by the caller).
orb::ObjectRef<int64_t> PickSecond(std::vector<orb::ObjectRef<int64_t>> refs) { return refs.at(1); }
ORB_REMOTE(GetVal, GetIntVal, SumAll, MakeInWorker, PickSecond);

struct Batch {
  std::string name;
  std::vector<orb::ObjectRef<int64_t>> parts;
  MSGPACK_DEFINE(name, parts);
};
int64_t SumBatch(Batch batch) {
  int64_t total = 0;
  for (const auto& v : orb::Get(batch.parts)) total += *v;
  return total;
}
ORB_REMOTE(SumBatch);

orb::Buffer MakeBuffer(int64_t n) {
  std::vector<uint8_t> bytes(n);
  for (int64_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  return orb::Buffer(std::move(bytes));
}
int64_t SumBuffer(orb::Buffer b) {
  int64_t total = 0;
  for (uint8_t v : b) total += v;
  return total;
}
ORB_REMOTE(MakeBuffer, SumBuffer);

// Keeps references in its state beyond the call that brought them.
class Keeper {
 public:
  static Keeper* Create() { return new Keeper(); }
  int Keep(orb::ObjectRef<std::vector<int64_t>> ref) {
    kept_.push_back(ref);
    return static_cast<int>(kept_.size());
  }
  int64_t SumKept() {
    int64_t total = 0;
    for (const auto& ref : kept_) {
      auto values = ref.Get(30000);
      for (int64_t v : *values) total += v;
    }
    return total;
  }
  int Forget() {
    kept_.clear();
    return 0;
  }

 private:
  std::vector<orb::ObjectRef<std::vector<int64_t>>> kept_;
};
ORB_REMOTE(Keeper::Create, &Keeper::Keep, &Keeper::SumKept, &Keeper::Forget);

orb::Config TestConfig() {
  orb::Config config;
  config.num_cpus = 2;
  config.object_store_memory = 128ll << 20;
  return config;
}

}  // namespace

TEST_CASE("a parameter that is an ObjectRef gets the reference, not the value", "[refs]") {
  orb::testing::EnsureCluster(TestConfig());
  auto text = orb::Put(std::string("aaa"));
  CHECK(*orb::Task(GetVal).Remote(text).Get(30000) == "aaa");
  auto inner = orb::Put(42);
  orb::ObjectRef<orb::ObjectRef<int>> outer = orb::Put(inner);  // a ref inside an object
  CHECK(orb::Get(outer)->ID() == inner.ID());
  CHECK(*orb::Task(GetIntVal).Remote(outer).Get(30000) == 42);
  // A ref made by a task can be passed on too.
  auto made = orb::Task(GetVal).Remote(text);
  CHECK(*orb::Task(GetVal).Remote(orb::Put(*made.Get())).Get(30000) == "aaa");
}

TEST_CASE("refs inside containers and structs travel as refs", "[refs]") {
  orb::testing::EnsureCluster(TestConfig());
  std::vector<orb::ObjectRef<int64_t>> refs{orb::Put<int64_t>(1), orb::Put<int64_t>(2), orb::Put<int64_t>(3)};
  CHECK(*orb::Task(SumAll).Remote(100, refs).Get(30000) == 106);
  CHECK(*orb::Task(SumBatch).Remote(Batch{"b", refs}).Get(30000) == 6);
  // A task hands back one of the refs it was given: the driver owns it.
  auto second = orb::Task(PickSecond).Remote(refs).Get(30000);
  CHECK(second->ID() == refs[1].ID());
  CHECK(*second->Get() == 2);
}

TEST_CASE("a ref a task returns stays readable while the caller holds it", "[refs]") {
  orb::testing::EnsureCluster(TestConfig());
  // 1 MiB: lives in the object store, owned by the worker that made it.
  orb::ObjectRef<std::vector<int64_t>> made = *orb::Task(MakeInWorker).Remote(1 << 17).Get(30000);
  auto values = made.Get(30000);
  REQUIRE(values->size() == (1u << 17));
  CHECK(values->back() == (1 << 17));
  // Read again later, from another task.
  auto keeper = orb::Actor(Keeper::Create).Remote();
  CHECK(*keeper.Task(&Keeper::Keep).Remote(made).Get(30000) == 1);
  CHECK(*keeper.Task(&Keeper::SumKept).Remote().Get(30000) == int64_t(1 << 17) * ((1 << 17) + 1) / 2);
}

TEST_CASE("an actor keeps a borrowed ref after its owner dropped every other one", "[refs][regression]") {
  orb::testing::EnsureCluster(TestConfig());
  auto keeper = orb::Actor(Keeper::Create).Remote();
  {
    auto big = orb::Put(std::vector<int64_t>(1 << 17, 3));  // 1 MiB, in the object store
    CHECK(*keeper.Task(&Keeper::Keep).Remote(big).Get(30000) == 1);
  }  // the driver's last ObjectRef goes here; the actor still borrows it
  for (int i = 0; i < 5; ++i) orb::Put(std::vector<int64_t>(1 << 17, 9));  // churn the store
  CHECK(*keeper.Task(&Keeper::SumKept).Remote().Get(30000) == int64_t(3) * (1 << 17));
  CHECK(*keeper.Task(&Keeper::Forget).Remote().Get(30000) == 0);
}

namespace {
int SlowSeven(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return 7;
}
// How many of the borrowed refs Wait finds ready within `timeout_ms`.
int WaitBorrowed(std::vector<orb::ObjectRef<int>> refs, int timeout_ms) {
  return static_cast<int>(orb::Wait(refs, static_cast<int>(refs.size()), timeout_ms).ready.size());
}
ORB_REMOTE(SlowSeven, WaitBorrowed);
}  // namespace

TEST_CASE("Wait on borrowed refs waits for their owner's objects, up to its timeout", "[refs]") {
  orb::testing::EnsureCluster();
  // The refs travel inside a value: the task borrows them while they are still pending.
  auto slow = orb::Task(SlowSeven).Remote(700);
  CHECK(*orb::Task(WaitBorrowed).Remote(std::vector<orb::ObjectRef<int>>{slow}, 30000).Get(60000) == 1);
  // Its timeout passes first: not ready, and it returned before the object was.
  auto slower = orb::Task(SlowSeven).Remote(8000);
  CHECK(*orb::Task(WaitBorrowed).Remote(std::vector<orb::ObjectRef<int>>{slower}, 300).Get(60000) == 0);
  CHECK(orb::Wait(std::vector<orb::ObjectRef<int>>{slower}, 1, 0).ready.empty());
  CHECK(*orb::Get(slower, 60000) == 7);
}

TEST_CASE("Get of an orb::Buffer is a view of the store, pinned while it lives", "[refs][buffer]") {
  orb::testing::EnsureCluster(TestConfig());
  const int64_t n = 16 << 20;
  int64_t expected = 0;
  for (int64_t i = 0; i < n; ++i) expected += static_cast<uint8_t>(i * 7);
  std::shared_ptr<orb::Buffer> view;
  {
    orb::ObjectRef<orb::Buffer> ref = orb::Task(MakeBuffer).Remote(n);
    view = orb::Get(ref, 30000);
    REQUIRE(view->size() == static_cast<size_t>(n));
    // Two Gets see the same bytes in place: nothing was copied.
    CHECK(orb::Get(ref)->data() == view->data());
    CHECK(orb::Get(std::vector<orb::ObjectRef<orb::Buffer>>{ref})[0]->data() == view->data());
    // As a task argument the bytes arrive whole.
    CHECK(*orb::Task(SumBuffer).Remote(ref).Get(30000) == expected);
  }
  // The ref is gone; the view still pins the object while the store fills with others.
  for (int i = 0; i < 12; ++i) orb::Put(orb::Buffer(std::vector<uint8_t>(16 << 20, 0xee)));
  int64_t total = 0;
  for (uint8_t v : *view) total += v;
  CHECK(total == expected);
  // A Buffer and a std::vector<uint8_t> are the same bytes on the wire.
  auto put = orb::Put(orb::Buffer(std::vector<uint8_t>{1, 2, 3}));
  CHECK(orb::Get(put)->ToVector() == std::vector<uint8_t>{1, 2, 3});
  CHECK(*orb::Task(SumBuffer).Remote(std::vector<uint8_t>{4, 5, 6}).Get(30000) == 15);
}
