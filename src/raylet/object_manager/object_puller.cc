#include "raylet/object_manager/object_puller.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>

#include "common/metrics.h"
#include "common/unix_time.h"

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
                        const WorkerID& owner, Done done) {
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
  auto created = store_->Create(id, size, owner, /*primary=*/false);
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
  t.start_ns = UnixNanos();
  t.waiters.push_back({reader, std::move(done)});
  spdlog::debug("pulling object {} ({} bytes) from {}", id.Hex(), size, source_stream);
  if (size == 0) return Finish(id, rpc::ErrorInfo());
  RequestChunks(id);
}

void ObjectPuller::RequestChunks(const ObjectID& id) {
  auto it = pulls_.find(id);
  if (it == pulls_.end()) return;
  Transfer& t = it->second;
  t.retry_due = false;
  while (t.failure.ok() && t.in_flight < options_.chunks_in_flight && !t.again.empty()) {
    auto [chunk_offset, length] = t.again.back();
    t.again.pop_back();
    Fetch(id, t, chunk_offset, length);
  }
  while (t.failure.ok() && t.in_flight < options_.chunks_in_flight && t.next_chunk < t.size) {
    uint64_t chunk_offset = t.next_chunk;
    uint64_t length = std::min(options_.chunk_bytes, t.size - chunk_offset);
    t.next_chunk += length;
    Fetch(id, t, chunk_offset, length);
  }
  FailIfIdle(id);
}

void ObjectPuller::Fetch(const ObjectID& id, Transfer& t, uint64_t chunk_offset, uint64_t length) {
  t.in_flight++;
  // The space is this pull's until it is sealed or aborted, which waits for every chunk
  // in flight: the fetch threads may write into it meanwhile.
  stream_.Fetch(t.source, id, chunk_offset, length, arena_->data() + t.offset + chunk_offset,
                [this, id, chunk_offset, length](absl::Status status) {
                  loop_->Post([this, id, chunk_offset, length, status] { OnChunk(id, chunk_offset, length, status); });
                });
}

void ObjectPuller::OnChunk(const ObjectID& id, uint64_t chunk_offset, uint64_t length, const absl::Status& status) {
  auto it = pulls_.find(id);
  if (it == pulls_.end()) return;
  Transfer& t = it->second;
  t.in_flight--;
  if (status.ok()) {
    t.received += length;
    if (t.received == t.size) return Finish(id, rpc::ErrorInfo());
    return RequestChunks(id);
  }
  if (absl::IsDataLoss(status)) IncrementCounter("object_chunks_dropped_corrupt");
  if (absl::IsUnavailable(status) && t.failure.ok() && t.retries < kMaxChunkRetries) {
    // Busy, or a connection that broke: again after a back-off (50 ms doubling to 1 s).
    IncrementCounter("object_chunks_retried");
    t.again.emplace_back(chunk_offset, length);
    int delay_ms = std::min(1000, 50 << std::min(t.retries, 5));
    t.retries++;
    if (!t.retry_due) {
      t.retry_due = true;
      loop_->RunAfter(std::chrono::milliseconds(delay_ms), [this, id] { RequestChunks(id); });
    }
    return;
  }
  if (t.failure.ok()) t.failure = status;
  FailIfIdle(id);
}

void ObjectPuller::FailIfIdle(const ObjectID& id) {
  auto it = pulls_.find(id);
  if (it == pulls_.end()) return;
  Transfer& t = it->second;
  if (t.failure.ok() || t.in_flight > 0) return;
  rpc::ErrorInfo error;
  // A holder with no room to read it back from disk still has it: not a loss.
  error.set_type(absl::IsResourceExhausted(t.failure) ? rpc::OBJECT_STORE_FULL : rpc::OBJECT_LOST);
  error.set_message("object " + id.Hex() + " could not be fetched from " + t.source + ": " +
                    std::string(t.failure.message()));
  Finish(id, error);
}

void ObjectPuller::SourceDead(const std::string& source_stream, const std::string& why) {
  bool any = false;
  std::vector<ObjectID> ids;
  for (auto& [id, t] : pulls_) {
    if (t.source != source_stream) continue;
    any = true;
    if (t.failure.ok()) t.failure = absl::UnavailableError(why);
    ids.push_back(id);
  }
  if (!any) return;
  stream_.Abandon(source_stream);
  for (const ObjectID& id : ids) FailIfIdle(id);
}

void ObjectPuller::Finish(const ObjectID& id, const rpc::ErrorInfo& error) {
  Transfer& t = pulls_[id];
  auto waiters = std::move(t.waiters);
  if (error.type() == rpc::ERROR_NONE) {
    ++pulls_total_;
    bytes_pulled_total_ += t.size;
    if (completed_.size() < kMaxCompleted) completed_.push_back({id, t.source, t.size, t.start_ns, UnixNanos()});
  } else {
    ++pull_failures_total_;
  }
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
