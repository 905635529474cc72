// Moves a leaving node's primary object copies to other nodes, so that scaling a node
// down loses nothing its owners still reference.
//
// For each primary, in turn over the target nodes (a few at a time): the target is
// asked to adopt it (it pulls the bytes and keeps them as the primary); then the owner
// is told where the object lives now. The owner answers whether it still has the object
// at this node: if not (it let go meanwhile), the target frees what it adopted. A
// target that cannot adopt (no room, gone) is skipped for the next one; an owner that
// cannot be reached is gone with its objects, so there is nothing to keep. The result
// counts what moved and names what could not; the caller keeps the node while anything
// could not move.
//
// Collaborators come as `Peers` (RPCs in the raylet, fakes in tests). Runs on one
// event loop: the callbacks given to peers must be called on it. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/id.h"

namespace orb {

struct EvacuatedObject {
  ObjectID id;
  uint64_t size = 0;
  WorkerID owner;
  std::string owner_address;  // the owner's RPC address ("ip:port"); empty when unknown
  std::vector<NodeID> copies;  // nodes that pulled a copy of it
};

class ObjectEvacuator {
 public:
  struct Peers {
    // Asks `target` to pull `object` from this node and keep it as the primary.
    std::function<void(const NodeID& target, const EvacuatedObject& object, std::function<void(absl::Status)> done)>
        adopt;
    // Tells the owner that `object` is at `target` now: true when it took the news,
    // false when it no longer has the object here (an error: it cannot be reached).
    std::function<void(const EvacuatedObject& object, const NodeID& target,
                       std::function<void(absl::StatusOr<bool>)> done)>
        tell_owner;
    // Frees what `target` adopted (its owner let it go meanwhile).
    std::function<void(const NodeID& target, const ObjectID& id)> free_at;
    // This node's copy can go: `id` lives at another node now.
    std::function<void(const ObjectID& id)> hand_over;
  };
  struct Result {
    int moved = 0;
    uint64_t bytes_moved = 0;
    int dropped = 0;  // owners gone or done with them: nothing to keep
    std::vector<std::string> failures;  // "object <id>: why", for what could not move
  };
  using Done = std::function<void(const Result&)>;

  explicit ObjectEvacuator(Peers peers, int in_flight = 4) : peers_(std::move(peers)), in_flight_(in_flight) {}

  // Moves `objects` to `targets` (in turn), then calls `done` once. `targets` must not
  // be empty when `objects` is not.
  void Evacuate(std::vector<EvacuatedObject> objects, std::vector<NodeID> targets, Done done);

 private:
  struct Run;
  void StartNext(const std::shared_ptr<Run>& run);
  void TryTarget(const std::shared_ptr<Run>& run, size_t object, size_t attempt, std::string last_error);
  void Finish(const std::shared_ptr<Run>& run, size_t object);

  Peers peers_;
  const int in_flight_;
};

}  // namespace orb
