// ObjectEvacuator against fake peers: where each object goes, what the owner is told,
// and what happens when a node cannot take one or an owner let it go.
#include <algorithm>
#include <catch2/catch.hpp>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include "raylet/object_manager/object_evacuator.h"

using namespace orb;

namespace {

ObjectID Id(int n) { return ObjectID::ForPut(TaskID::Nil(), static_cast<uint32_t>(n)); }

// Peers whose answers the test decides; calls are queued until answered.
struct FakePeers {
  std::map<NodeID, std::string> refuse;   // target -> why it cannot adopt
  std::set<ObjectID> owner_let_go;        // the owner answers false for these
  std::set<ObjectID> owner_unreachable;   // the owner cannot be reached
  std::vector<std::pair<NodeID, ObjectID>> adopted, freed;
  std::vector<std::pair<ObjectID, NodeID>> told;
  std::vector<ObjectID> handed_over;
  std::deque<std::function<void()>> pending;  // answers not yet given
  int max_pending = 0;

  ObjectEvacuator::Peers Make() {
    ObjectEvacuator::Peers peers;
    peers.adopt = [this](const NodeID& target, const EvacuatedObject& o, std::function<void(absl::Status)> done) {
      pending.push_back([this, target, id = o.id, done] {
        auto r = refuse.find(target);
        if (r != refuse.end()) return done(absl::UnavailableError(r->second));
        adopted.emplace_back(target, id);
        done(absl::OkStatus());
      });
      max_pending = std::max<int>(max_pending, pending.size());
    };
    peers.tell_owner = [this](const EvacuatedObject& o, const NodeID& target, std::function<void(absl::StatusOr<bool>)> done) {
      told.emplace_back(o.id, target);
      if (owner_unreachable.count(o.id)) return done(absl::UnavailableError("connection refused"));
      done(!owner_let_go.count(o.id));
    };
    peers.free_at = [this](const NodeID& target, const ObjectID& id) { freed.emplace_back(target, id); };
    peers.hand_over = [this](const ObjectID& id) { handed_over.push_back(id); };
    return peers;
  }
  void AnswerAll() {
    while (!pending.empty()) {
      auto next = std::move(pending.front());
      pending.pop_front();
      next();
    }
  }
};

EvacuatedObject Object(int n, uint64_t size = 100) {
  EvacuatedObject o;
  o.id = Id(n);
  o.size = size;
  o.owner = WorkerID::FromRandom();
  o.owner_address = "127.0.0.1:1000" + std::to_string(n);
  return o;
}

}  // namespace

TEST_CASE("objects go to the other nodes in turn, a few at a time, and owners learn where", "[evacuator]") {
  FakePeers fake;
  ObjectEvacuator evacuator(fake.Make(), /*in_flight=*/2);
  NodeID a = NodeID::FromRandom(), b = NodeID::FromRandom();
  std::optional<ObjectEvacuator::Result> result;
  evacuator.Evacuate({Object(1), Object(2), Object(3), Object(4, 50)}, {a, b}, [&](const auto& r) { result = r; });
  CHECK_FALSE(result);
  CHECK(fake.pending.size() == 2);  // two in flight
  fake.AnswerAll();
  REQUIRE(result);
  CHECK(result->moved == 4);
  CHECK(result->bytes_moved == 350);
  CHECK(result->failures.empty());
  CHECK(fake.max_pending == 2);
  std::map<NodeID, int> per_node;
  for (const auto& [node, id] : fake.adopted) per_node[node]++;
  CHECK(per_node[a] == 2);
  CHECK(per_node[b] == 2);
  // Each owner was told the node that adopted its object, and only then was the copy here let go.
  REQUIRE(fake.told.size() == 4);
  for (const auto& [id, node] : fake.told) {
    CHECK(std::count(fake.adopted.begin(), fake.adopted.end(), std::make_pair(node, id)) == 1);
  }
  CHECK(fake.handed_over.size() == 4);
  CHECK(fake.freed.empty());
}

TEST_CASE("a node that cannot take an object is passed over; when none can, the object is named", "[evacuator]") {
  FakePeers fake;
  ObjectEvacuator evacuator(fake.Make());
  NodeID full = NodeID::FromRandom(), roomy = NodeID::FromRandom();
  fake.refuse[full] = "object store full";
  std::optional<ObjectEvacuator::Result> result;
  evacuator.Evacuate({Object(1), Object(2), Object(3)}, {full, roomy}, [&](const auto& r) { result = r; });
  fake.AnswerAll();
  REQUIRE(result);
  CHECK(result->moved == 3);
  for (const auto& [node, id] : fake.adopted) CHECK(node == roomy);

  fake.refuse[roomy] = "leaving too";
  fake.adopted.clear();
  fake.handed_over.clear();
  result.reset();
  evacuator.Evacuate({Object(5)}, {full, roomy}, [&](const auto& r) { result = r; });
  fake.AnswerAll();
  REQUIRE(result);
  CHECK(result->moved == 0);
  REQUIRE(result->failures.size() == 1);
  CHECK_THAT(result->failures[0], Catch::Contains("object " + Id(5).Hex()) && Catch::Contains("no node could take it"));
  // Kept here: nothing was handed over.
  CHECK(fake.handed_over.empty());
}

TEST_CASE("an object its owner let go (or whose owner is gone) is freed where it went, not counted as moved",
          "[evacuator]") {
  FakePeers fake;
  ObjectEvacuator evacuator(fake.Make());
  NodeID a = NodeID::FromRandom();
  fake.owner_let_go.insert(Id(1));
  fake.owner_unreachable.insert(Id(2));
  std::optional<ObjectEvacuator::Result> result;
  evacuator.Evacuate({Object(1), Object(2), Object(3)}, {a}, [&](const auto& r) { result = r; });
  fake.AnswerAll();
  REQUIRE(result);
  CHECK(result->moved == 1);
  CHECK(result->dropped == 2);
  CHECK(result->failures.empty());
  CHECK(fake.freed == std::vector<std::pair<NodeID, ObjectID>>{{a, Id(1)}, {a, Id(2)}});
}

TEST_CASE("with no other node, or no owner address, objects cannot move and say so; no objects is done at once",
          "[evacuator]") {
  FakePeers fake;
  ObjectEvacuator evacuator(fake.Make());
  std::optional<ObjectEvacuator::Result> result;
  evacuator.Evacuate({}, {}, [&](const auto& r) { result = r; });
  REQUIRE(result);
  CHECK(result->failures.empty());
  result.reset();
  evacuator.Evacuate({Object(1)}, {}, [&](const auto& r) { result = r; });
  REQUIRE(result);
  REQUIRE(result->failures.size() == 1);
  CHECK_THAT(result->failures[0], Catch::Contains("no other node"));
  result.reset();
  EvacuatedObject unknown = Object(2);
  unknown.owner_address.clear();
  evacuator.Evacuate({unknown}, {NodeID::FromRandom()}, [&](const auto& r) { result = r; });
  REQUIRE(result);
  REQUIRE(result->failures.size() == 1);
  CHECK_THAT(result->failures[0], Catch::Contains("owner's address is not known"));
  CHECK(fake.adopted.empty());
}
