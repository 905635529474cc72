// ObjectTable's reference counting: owned objects kept by local, task, borrower and
// containing-object holds; borrowed objects registered once and released to their owner.
#include <catch2/catch.hpp>

#include "core/object_table.h"

using namespace orb;

namespace {

rpc::ObjectValue Inline(const std::string& bytes) {
  rpc::ObjectValue v;
  v.set_inline_value(bytes);
  return v;
}

struct Released {
  std::string owner;
  ObjectID id;
  int holds;
};

}  // namespace

TEST_CASE("an owned object lives while a borrower holds it", "[object_table]") {
  ObjectTable table([](const ObjectID&) {});
  ObjectID id = ObjectID::FromRandom();
  table.AddReady(id, Inline("x"));
  REQUIRE(table.UpdateBorrower(id, "10.0.0.2:5000", 1));
  table.RemoveLocalRef(id);
  CHECK(table.IsOwned(id));  // the borrower keeps it
  REQUIRE(table.UpdateBorrower(id, "10.0.0.2:5000", -1));
  CHECK_FALSE(table.IsOwned(id));
  CHECK_FALSE(table.UpdateBorrower(id, "10.0.0.2:5000", 1));  // gone: the borrow is void
}

TEST_CASE("an object keeps what its value contains until it is freed", "[object_table]") {
  std::vector<ObjectID> freed;
  ObjectTable table([&](const ObjectID& id) { freed.push_back(id); });
  ObjectID inner = ObjectID::FromRandom(), outer = ObjectID::FromRandom();
  table.AddReady(inner, Inline("1"));
  table.AddLocalRef(inner);  // the hold taken when it was serialized into `outer`
  table.AddReady(outer, Inline("[inner]"), {inner});
  table.RemoveLocalRef(inner);  // the program drops its ref to inner
  CHECK(table.IsOwned(inner));
  table.RemoveLocalRef(outer);  // ...and to outer: both go
  CHECK_FALSE(table.IsOwned(outer));
  CHECK_FALSE(table.IsOwned(inner));
}

TEST_CASE("a borrow is registered once, and released to its owner with every hold it counted", "[object_table]") {
  std::vector<Released> released;
  ObjectTable table([](const ObjectID&) {},
                    [&](const std::string& owner, const ObjectID& id, int holds) { released.push_back({owner, id, holds}); });
  ObjectID id = ObjectID::FromRandom();
  table.Borrow(id, "10.0.0.1:7000");
  table.Borrow(id, "10.0.0.1:7000");  // a second ref read: no second registration
  auto registrations = table.TakeRegistrations();
  REQUIRE(registrations.size() == 1);
  REQUIRE(registrations["10.0.0.1:7000"] == std::vector<ObjectID>{id});
  CHECK(table.TakeRegistrations().empty());
  table.FinishRegistration({id}, true);
  CHECK(table.num_borrowed() == 1);
  table.RemoveLocalRef(id);
  CHECK(released.empty());
  table.RemoveLocalRef(id);
  REQUIRE(released.size() == 1);
  CHECK(released[0].owner == "10.0.0.1:7000");
  CHECK(released[0].holds == 1);
  CHECK(table.num_borrowed() == 0);
}

TEST_CASE("a borrow dropped before its registration finished is released after it", "[object_table]") {
  std::vector<Released> released;
  ObjectTable table([](const ObjectID&) {},
                    [&](const std::string& owner, const ObjectID& id, int holds) { released.push_back({owner, id, holds}); });
  ObjectID id = ObjectID::FromRandom();
  table.Borrow(id, "10.0.0.1:7000");
  auto registrations = table.TakeRegistrations();
  table.RemoveLocalRef(id);  // the ref is gone while the owner is being told
  CHECK(released.empty());
  table.FinishRegistration({id}, true);
  REQUIRE(released.size() == 1);
  CHECK(released[0].holds == 1);
  // Not registered (the owner no longer had it): nothing to release.
  ObjectID lost = ObjectID::FromRandom();
  table.Borrow(lost, "10.0.0.1:7000");
  table.TakeRegistrations();
  table.FinishRegistration({lost}, false);
  table.RemoveLocalRef(lost);
  CHECK(released.size() == 1);
}

TEST_CASE("a task's result hands over the holds the worker registered for this process", "[object_table]") {
  std::vector<Released> released;
  ObjectTable table([](const ObjectID&) {},
                    [&](const std::string& owner, const ObjectID& id, int holds) { released.push_back({owner, id, holds}); });
  ObjectID result = ObjectID::FromRandom(), made_in_worker = ObjectID::FromRandom();
  table.AddPending(result);
  rpc::ObjectValue value = Inline("[ref]");
  auto* ref = value.add_contained_refs();
  ref->set_object_id(made_in_worker.Binary());
  ref->mutable_owner()->set_ip("10.0.0.3");
  ref->mutable_owner()->set_port(9000);
  table.SetReady(result, value);
  table.Borrow(made_in_worker, "10.0.0.3:9000");  // the program reads the ref out of the result
  CHECK(table.TakeRegistrations().empty());       // registered already, by the worker
  table.RemoveLocalRef(result);                   // the result goes: its hold with it
  CHECK(released.empty());
  table.RemoveLocalRef(made_in_worker);           // and the program's ref
  REQUIRE(released.size() == 1);
  CHECK(released[0].owner == "10.0.0.3:9000");
  CHECK(released[0].holds == 1);
}
