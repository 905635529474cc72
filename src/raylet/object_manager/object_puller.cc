#include "raylet/object_manager/object_puller.h"

#include <spdlog/spdlog.h>

#include <cstring>

#include "common/metrics.h"

namespace orb {

ObjectPuller::ObjectPuller(LocalObjectStore* store, ShmArena* arena, EventLoop* loop, ObjectPullerOptions options)
    : store_(store),
      arena_(arena),
      loop_(loop),
      options_(std::move(options)),
      // Twice a transfer's chunks in flight: a holder that hangs (until the socket timeout)
      // holds at most half the threads, and pulls from other nodes go on.
      stream_(options_.token, 2 * options_.chunks_in_flight) {}

void ObjectPuller::Pull(const ObjectID& id, uint64_t size, const std::string& source_stream, const WorkerID& reader,
                        Done done) {
  if (store_->Contains(id)) {
    // Already here (an earlier pull, or a copy this node made): pin and answer.
    store_->Get({id}, reader, std::chrono::milliseconds(0),
                [done](std::vector<ObjectLocationInArena> locs) { done(locs[0], rpc::ErrorInfo()); });
    return;
  }
  auto existing = pulls_.find(id);
  if (existing != pulls_.end()) {
    existing->second.waiters.push_back({reader, std::move(done)});
    return;
  }
  auto created = store_->Create(id, size, WorkerID::Nil(), /*primary=*/false);
  if (!created.ok()) {
    rpc::ErrorInfo error;
    error.set_type(rpc::OBJECT_STORE_FULL);
    error.set_message("cannot make room for object " + id.Hex() + " pulled from another node: " +
                      std::string(created.status().message()));
    done(ObjectLocationInArena(), error);
    return;
  }
  Transfer& t = pulls_[id];
  t.size = size;
  t.offset = created->offset;
  t.source = source_stream;
  t.waiters.push_back({reader, std::move(done)});
  spdlog::debug("pulling object {} ({} bytes) from {}", id.Hex(), size, source_stream);
  if (size == 0) return Finish(id, rpc::ErrorInfo());
  RequestChunks(id);
}

void ObjectPuller::RequestChunks(const ObjectID& id) {
  Transfer& t = pulls_[id];
  while (t.failure.ok() && t.in_flight < options_.chunks_in_flight && t.next_chunk < t.size) {
    uint64_t chunk_offset = t.next_chunk;
    uint64_t length = std::min(options_.chunk_bytes, t.size - chunk_offset);
    t.next_chunk += length;
    t.in_flight++;
    // The space is this pull's until it is sealed or aborted, which waits for every
    // chunk in flight: the fetch threads may write into it meanwhile.
    stream_.Fetch(t.source, id, chunk_offset, length, arena_->data() + t.offset + chunk_offset,
                  [this, id, length](absl::Status status) {
                    loop_->Post([this, id, length, status] { OnChunk(id, length, status); });
                  });
  }
}

void ObjectPuller::OnChunk(const ObjectID& id, uint64_t length, const absl::Status& status) {
  auto it = pulls_.find(id);
  if (it == pulls_.end()) return;
  Transfer& t = it->second;
  t.in_flight--;
  if (!status.ok()) {
    if (absl::IsDataLoss(status)) IncrementCounter("object_chunks_dropped_corrupt");
    if (t.failure.ok()) t.failure = status;
  } else {
    t.received += length;
  }
  if (!t.failure.ok()) {
    if (t.in_flight > 0) return;
    rpc::ErrorInfo error;
    error.set_type(rpc::OBJECT_LOST);
    error.set_message("object " + id.Hex() + " could not be fetched from " + t.source + ": " +
                      std::string(t.failure.message()));
    return Finish(id, error);
  }
  if (t.received == t.size) return Finish(id, rpc::ErrorInfo());
  RequestChunks(id);
}

void ObjectPuller::Finish(const ObjectID& id, const rpc::ErrorInfo& error) {
  auto waiters = std::move(pulls_[id].waiters);
  pulls_.erase(id);
  if (error.type() != rpc::ERROR_NONE) {
    store_->Abort(id);
    for (auto& w : waiters) w.done(ObjectLocationInArena(), error);
    return;
  }
  store_->Seal(id).IgnoreError();
  for (auto& w : waiters) {
    store_->Get({id}, w.reader, std::chrono::milliseconds(0),
                [done = std::move(w.done)](std::vector<ObjectLocationInArena> locs) { done(locs[0], rpc::ErrorInfo()); });
  }
}

}  // namespace orb
