// ObjectRefs as values (Ray's C++ API allows this only in local mode; orb on clusters
// too): parameters that are ObjectRefs, ObjectRef<ObjectRef<T>>, Put of a ref,
// std::vector<ObjectRef<T>> parameters, refs in structs, refs returned by tasks, and
// refs an actor keeps after their owner let go of its own.
#include <gtest/gtest.h>
#include <orb/api.h>

#include "conformance.h"

std::string GetVal(orb::ObjectRef<std::string> obj) { return *obj.Get(); }
int GetIntVal(orb::ObjectRef<orb::ObjectRef<int>> obj) {
  auto inner = *obj.Get();
  return *inner.Get();
}
std::vector<std::shared_ptr<int>> GetList(int, std::vector<orb::ObjectRef<int>> list) { return orb::Get(list); }
orb::ObjectRef<std::vector<int>> MakeVector(int n) { return orb::Put(std::vector<int>(n, 5)); }
ORB_REMOTE(GetVal, GetIntVal, GetList, MakeVector);

struct Shard {
  std::string name;
  std::vector<orb::ObjectRef<int>> parts;
  MSGPACK_DEFINE(name, parts);
};
int SumShard(Shard shard) {
  int total = 0;
  for (const auto& p : orb::Get(shard.parts)) total += *p;
  return total;
}
ORB_REMOTE(SumShard);

class Holder {
 public:
  static Holder* FactoryCreate() { return new Holder(); }
  std::string GetVal(orb::ObjectRef<std::string> obj) { return *obj.Get(); }
  size_t Keep(orb::ObjectRef<std::vector<int>> ref) {
    kept_.push_back(ref);
    return kept_.size();
  }
  int64_t SumKept() {
    int64_t total = 0;
    for (const auto& ref : kept_) {
      auto values = ref.Get(30000);
      for (int v : *values) total += v;
    }
    return total;
  }

 private:
  std::vector<orb::ObjectRef<std::vector<int>>> kept_;
};
ORB_REMOTE(Holder::FactoryCreate, &Holder::GetVal, &Holder::Keep, &Holder::SumKept);

TEST(ObjectRefConformance, RefParametersAndRefsOfRefs) {
  InitForTest();
  auto obj = orb::Put(std::string("aaa"));
  EXPECT_EQ(*orb::Task(GetVal).Remote(obj).Get(30000), "aaa");
  auto obj0 = orb::Put(42);
  orb::ObjectRef<orb::ObjectRef<int>> obj1 = orb::Put(obj0);
  EXPECT_EQ(orb::Get(obj1)->ID(), obj0.ID());
  EXPECT_EQ(*orb::Task(GetIntVal).Remote(obj1).Get(30000), 42);
  std::vector<orb::ObjectRef<int>> list{obj0, obj0};
  auto got = *orb::Task(GetList).Remote(1, list).Get(30000);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(*got[0], 42);
  auto holder = orb::Actor(Holder::FactoryCreate).Remote();
  EXPECT_EQ(*holder.Task(&Holder::GetVal).Remote(obj).Get(30000), "aaa");
}

TEST(ObjectRefConformance, RefsInStructsAndReturnedRefs) {
  InitForTest();
  Shard shard{"s", {orb::Put(1), orb::Put(2), orb::Put(3)}};
  EXPECT_EQ(*orb::Task(SumShard).Remote(shard).Get(30000), 6);
  orb::ObjectRef<std::vector<int>> made = *orb::Task(MakeVector).Remote(300000).Get(30000);  // 1.2 MB
  EXPECT_EQ(made.Get(30000)->size(), 300000u);
}

TEST(ObjectRefConformance, AnActorKeepsARefItsOwnerDropped) {
  InitForTest();
  auto holder = orb::Actor(Holder::FactoryCreate).Remote();
  {
    auto big = orb::Put(std::vector<int>(300000, 2));
    EXPECT_EQ(*holder.Task(&Holder::Keep).Remote(big).Get(30000), 1u);
  }
  EXPECT_EQ(*holder.Task(&Holder::SumKept).Remote().Get(30000), 600000);
}
