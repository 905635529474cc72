#include "raylet/object_manager/object_evacuator.h"

#include <spdlog/spdlog.h>

namespace orb {

struct ObjectEvacuator::Run {
  std::vector<EvacuatedObject> objects;
  std::vector<NodeID> targets;
  Done done;
  Result result;
  size_t next = 0;        // the next object to start
  size_t next_target = 0;  // round robin over targets: where each object tries first
  std::vector<size_t> first_target;  // by object
  int running = 0;
};

void ObjectEvacuator::Evacuate(std::vector<EvacuatedObject> objects, std::vector<NodeID> targets, Done done) {
  auto run = std::make_shared<Run>();
  run->objects = std::move(objects);
  run->targets = std::move(targets);
  run->done = std::move(done);
  run->first_target.resize(run->objects.size());
  if (run->objects.empty()) return run->done(run->result);
  if (run->targets.empty()) {
    for (const auto& o : run->objects) run->result.failures.push_back("object " + o.id.Hex() + ": no other node to take it");
    return run->done(run->result);
  }
  for (int i = 0; i < in_flight_; ++i) StartNext(run);
}

void ObjectEvacuator::StartNext(const std::shared_ptr<Run>& run) {
  if (run->next >= run->objects.size()) {
    if (run->running == 0 && run->done) std::exchange(run->done, nullptr)(run->result);
    return;
  }
  size_t object = run->next++;
  run->running++;
  if (run->objects[object].owner_address.empty()) {
    run->result.failures.push_back("object " + run->objects[object].id.Hex() + ": its owner's address is not known here");
    return Finish(run, object);
  }
  run->first_target[object] = run->next_target++;
  TryTarget(run, object, 0, "");
}

void ObjectEvacuator::TryTarget(const std::shared_ptr<Run>& run, size_t object, size_t attempt, std::string last_error) {
  const EvacuatedObject& o = run->objects[object];
  if (attempt >= run->targets.size()) {
    run->result.failures.push_back("object " + o.id.Hex() + ": no node could take it (last: " + last_error + ")");
    return Finish(run, object);
  }
  // Then each other node once.
  NodeID target = run->targets[(run->first_target[object] + attempt) % run->targets.size()];
  peers_.adopt(target, o, [this, run, object, attempt, target](absl::Status adopted) {
    const EvacuatedObject& o = run->objects[object];
    if (!adopted.ok()) {
      spdlog::info("node {} could not take object {}: {}", target.Hex(), o.id.Hex(), adopted.ToString());
      return TryTarget(run, object, attempt + 1, adopted.ToString());
    }
    peers_.tell_owner(o, target, [this, run, object, target](absl::StatusOr<bool> accepted) {
      const EvacuatedObject& o = run->objects[object];
      if (accepted.ok() && *accepted) {
        run->result.moved++;
        run->result.bytes_moved += o.size;
      } else {
        // The owner let it go, or is gone with every reference to it: nothing to keep.
        run->result.dropped++;
        peers_.free_at(target, o.id);
      }
      peers_.hand_over(o.id);
      Finish(run, object);
    });
  });
}

void ObjectEvacuator::Finish(const std::shared_ptr<Run>& run, size_t) {
  run->running--;
  StartNext(run);
}

}  // namespace orb
