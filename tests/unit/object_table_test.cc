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
  ObjectTable table([](const ObjectID&, const std::string&) {});
  ObjectID id = ObjectID::FromRandom();
  table.AddReady(id, Inline("x"));
  REQUIRE(table.UpdateBorrower(id, "10.0.0.2:5000", 1));
  table.RemoveLocalRef(id);
  CHECK(table.IsOwned(id));  // the borrower keeps it
  REQUIRE(table.UpdateBorrower(id, "10.0.0.2:5000", -1));
  CHECK_FALSE(table.IsOwned(id));
  CHECK_FALSE(table.UpdateBorrower(id, "10.0.0.2:5000", 1));  // gone: the borrow is void
}

TEST_CASE("objects in scope are those pending or still held", "[object_table]") {
  ObjectTable table([](const ObjectID&, const std::string&) {});
  REQUIRE(table.num_in_scope() == 0);
  ObjectID put = ObjectID::FromRandom(), pending = ObjectID::FromRandom();
  table.AddReady(put, Inline("x"));
  table.AddPending(pending);
  REQUIRE(table.num_in_scope() == 2);
  table.RemoveLocalRef(pending);  // its task still runs: it stays until it is ready
  REQUIRE(table.num_in_scope() == 2);
  table.SetReady(pending, Inline("y"));
  table.RemoveLocalRef(put);
  REQUIRE(table.num_in_scope() == 0);
}

TEST_CASE("an object keeps what its value contains until it is freed", "[object_table]") {
  std::vector<ObjectID> freed;
  ObjectTable table([&](const ObjectID& id, const std::string&) { freed.push_back(id); });
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
  ObjectTable table([](const ObjectID&, const std::string&) {},
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
  ObjectTable table([](const ObjectID&, const std::string&) {},
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
  ObjectTable table([](const ObjectID&, const std::string&) {},
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

namespace {
rpc::ObjectValue InStore(const std::string& node) {
  rpc::ObjectValue v;
  v.set_in_store_node_id(node);
  v.set_size(1 << 20);
  return v;
}
// A task `name` taking `args` by reference, returning `ret`.
std::shared_ptr<const rpc::TaskSpec> Spec(const std::string& name, const ObjectID& ret, std::vector<ObjectID> args,
                                          int max_retries = 3) {
  auto spec = std::make_shared<rpc::TaskSpec>();
  spec->set_function_name(name);
  spec->set_return_id(ret.Binary());
  spec->set_max_retries(max_retries);
  for (const auto& a : args) spec->add_args()->mutable_ref()->set_object_id(a.Binary());
  return spec;
}
bool Alive(const std::string& node) { return node != "dead"; }
}  // namespace

TEST_CASE("a lost result is rebuilt through the chain of tasks that made it", "[object_table][lineage]") {
  std::vector<ObjectID> freed;
  ObjectTable table([&](const ObjectID& id, const std::string&) { freed.push_back(id); });
  ObjectID a = ObjectID::FromRandom(), b = ObjectID::FromRandom(), c = ObjectID::FromRandom();
  // c = h(g(f())), the program keeping only c: a and b are held by tasks while they run.
  table.AddPending(a, Spec("f", a, {}));
  table.AddPending(b, Spec("g", b, {a}));
  table.AddTaskRef(a);
  table.RemoveLocalRef(a);
  table.AddPending(c, Spec("h", c, {b}));
  table.AddTaskRef(b);
  table.RemoveLocalRef(b);
  table.SetReady(a, InStore("dead"));
  table.SetReady(b, InStore("dead"));
  table.RemoveTaskRef(a);
  table.SetReady(c, InStore("dead"));
  table.RemoveTaskRef(b);
  // a and b are let go (their store copies freed) but kept as c's lineage.
  CHECK(freed == std::vector<ObjectID>{a, b});
  CHECK(table.size() == 3);
  CHECK(table.lineage_bytes() > 0);

  auto recovery = table.BeginReconstruction(c, "dead", "node dead died", Alive);
  REQUIRE(recovery.kind == ObjectTable::Recovery::Kind::kResubmit);
  REQUIRE(recovery.resubmit.size() == 3);
  CHECK(recovery.resubmit[0].function_name() == "h");  // dependents first
  CHECK(recovery.resubmit[1].function_name() == "g");
  CHECK(recovery.resubmit[2].function_name() == "f");
  CHECK(recovery.resubmit[0].attempt() == 1);
  CHECK(table.GetIfReady(c) == nullptr);  // pending again
  // A second report of the same loss starts nothing more.
  CHECK(table.BeginReconstruction(c, "dead", "again", Alive).kind == ObjectTable::Recovery::Kind::kInProgress);

  // The submitter runs them again, each task holding its argument until it is done.
  table.AddTaskRef(b);  // h's
  table.AddTaskRef(a);  // g's
  table.SetReady(a, InStore("alive"));
  table.SetReady(b, InStore("alive"));
  table.RemoveTaskRef(a);
  table.SetReady(c, InStore("alive"));
  table.RemoveTaskRef(b);
  REQUIRE(table.GetIfReady(c) != nullptr);
  CHECK(table.GetIfReady(c)->in_store_node_id() == "alive");
  // Dropping the last ref frees the whole chain, lineage included.
  table.RemoveLocalRef(c);
  CHECK(table.size() == 0);
  CHECK(table.lineage_bytes() == 0);
}

TEST_CASE("an object that cannot be rebuilt becomes an error saying why", "[object_table][lineage]") {
  ObjectTable table([](const ObjectID&, const std::string&) {});
  ObjectID put = ObjectID::FromRandom(), once = ObjectID::FromRandom(), retried = ObjectID::FromRandom();
  table.AddReady(put, InStore("dead"));
  table.AddPending(once, nullptr, "task 'f' has max_retries=0, so it does not run again");
  table.SetReady(once, InStore("dead"));
  table.AddPending(retried, Spec("g", retried, {}, /*max_retries=*/1));
  table.SetReady(retried, InStore("dead"));

  CHECK(table.BeginReconstruction(put, "dead", "node dead died", Alive).kind == ObjectTable::Recovery::Kind::kFailed);
  CHECK(table.GetIfReady(put)->error().type() == rpc::OBJECT_LOST);
  CHECK_THAT(table.GetIfReady(put)->error().message(), Catch::Contains("node dead died") && Catch::Contains("Put"));
  table.BeginReconstruction(once, "dead", "node dead died", Alive);
  CHECK_THAT(table.GetIfReady(once)->error().message(), Catch::Contains("max_retries=0"));
  // One re-run allowed: the second loss is final.
  CHECK(table.BeginReconstruction(retried, "dead", "x", Alive).kind == ObjectTable::Recovery::Kind::kResubmit);
  table.SetReady(retried, InStore("dead"));
  CHECK(table.BeginReconstruction(retried, "dead", "x", Alive).kind == ObjectTable::Recovery::Kind::kFailed);
  CHECK_THAT(table.GetIfReady(retried)->error().message(), Catch::Contains("max_retries"));
  // A copy somewhere else (rebuilt already) is not lost.
  ObjectID moved = ObjectID::FromRandom();
  table.AddPending(moved, Spec("h", moved, {}));
  table.SetReady(moved, InStore("alive"));
  CHECK(table.BeginReconstruction(moved, "dead", "x", Alive).kind == ObjectTable::Recovery::Kind::kNotLost);
}

TEST_CASE("lineage is kept within its budget; beyond it, a loss says the budget was full", "[object_table][lineage]") {
  ObjectTable table([](const ObjectID&, const std::string&) {}, nullptr, /*max_lineage_bytes=*/200);
  std::vector<ObjectID> ids;
  for (int i = 0; i < 10; ++i) {
    ids.push_back(ObjectID::FromRandom());
    table.AddPending(ids.back(), Spec("f", ids.back(), {}));
    table.SetReady(ids.back(), InStore("dead"));
  }
  CHECK(table.lineage_bytes() <= 200);
  table.BeginReconstruction(ids.back(), "dead", "node dead died", Alive);
  CHECK_THAT(table.GetIfReady(ids.back())->error().message(), Catch::Contains("ORB_MAX_LINEAGE_BYTES"));
  for (const auto& id : ids) table.RemoveLocalRef(id);
  CHECK(table.lineage_bytes() == 0);
}

TEST_CASE("a task pinned to a dead node cannot rebuild its result, and says so", "[object_table][lineage]") {
  ObjectTable table([](const ObjectID&, const std::string&) {});
  ObjectID id = ObjectID::FromRandom();
  auto spec = std::make_shared<rpc::TaskSpec>(*Spec("pinned", id, {}));
  spec->mutable_scheduling()->set_strategy(rpc::SchedulingOptions::NODE_AFFINITY);
  spec->mutable_scheduling()->set_affinity_node_id("dead");
  table.AddPending(id, spec);
  table.SetReady(id, InStore("dead"));
  CHECK(table.BeginReconstruction(id, "dead", "node dead died", Alive).kind == ObjectTable::Recovery::Kind::kFailed);
  CHECK_THAT(table.GetIfReady(id)->error().message(), Catch::Contains("hard node affinity"));
}

TEST_CASE("an object moved off a drained node is freed and read where it went; a loss at the old node is no loss",
          "[object_table]") {
  std::vector<std::pair<ObjectID, std::string>> freed;
  ObjectTable table([&](const ObjectID& id, const std::string& node) { freed.emplace_back(id, node); });
  ObjectID put = ObjectID::FromRandom(), inline_value = ObjectID::FromRandom();
  table.AddReady(put, InStore("leaving"));
  table.AddReady(inline_value, Inline("x"));
  CHECK_FALSE(table.MoveInStore(put, "elsewhere", "new"));  // not where the mover says
  CHECK_FALSE(table.MoveInStore(inline_value, "leaving", "new"));
  CHECK_FALSE(table.MoveInStore(ObjectID::FromRandom(), "leaving", "new"));  // not owned
  REQUIRE(table.MoveInStore(put, "leaving", "new"));
  CHECK(table.GetIfReady(put)->in_store_node_id() == "new");
  // A reader that failed at the old node reports it: nothing is lost.
  CHECK(table.BeginReconstruction(put, "leaving", "node died", Alive).kind == ObjectTable::Recovery::Kind::kNotLost);
  table.RemoveLocalRef(put);
  REQUIRE(freed.size() == 1);
  CHECK(freed[0].second == "new");
}
