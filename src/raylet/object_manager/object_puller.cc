#include "raylet/object_manager/object_puller.h"

#include <spdlog/spdlog.h>

#include <cstring>

#include "common/metrics.h"

namespace orb {

ObjectPuller::ObjectPuller(LocalObjectStore* store, ShmArena* arena, EventLoop* loop, ObjectPullerOptions options)
    : store_(store), arena_(arena), loop_(loop), options_(std::move(options)) {}

RpcClient<rpc::RayletService>* ObjectPuller::Client(const std::string& address) {
  auto& client = clients_[address];
  if (!client) client = std::make_unique<RpcClient<rpc::RayletService>>(address, options_.token);
  return client.get();
}

void ObjectPuller::Pull(const ObjectID& id, uint64_t size, const std::string& source_address, const WorkerID& reader,
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
  t.source = Client(source_address);
  t.waiters.push_back({reader, std::move(done)});
  spdlog::debug("pulling object {} ({} bytes) from {}", id.Hex(), size, source_address);
  if (size == 0) return Finish(id, rpc::ErrorInfo());
  RequestChunks(id);
}

void ObjectPuller::RequestChunks(const ObjectID& id) {
  Transfer& t = pulls_[id];
  while (!t.failed && t.in_flight < options_.chunks_in_flight && t.next_chunk < t.size) {
    uint64_t chunk_offset = t.next_chunk;
    uint64_t length = std::min(options_.chunk_bytes, t.size - chunk_offset);
    t.next_chunk += length;
    t.in_flight++;
    rpc::ReadObjectChunkRequest request;
    request.set_object_id(id.Binary());
    request.set_offset(static_cast<int64_t>(chunk_offset));
    request.set_length(static_cast<int64_t>(length));
    CallOptions call;
    call.timeout = std::chrono::seconds(60);
    t.source->Call<rpc::ReadObjectChunkReply>(
        ORB_RPC(ReadObjectChunk), request,
        [this, id, chunk_offset](const absl::Status& status, rpc::ReadObjectChunkReply&& reply) {
          loop_->Post([this, id, chunk_offset, status, reply = std::move(reply)]() mutable {
            OnChunk(id, chunk_offset, status, std::move(reply));
          });
        },
        call);
  }
}

void ObjectPuller::OnChunk(const ObjectID& id, uint64_t chunk_offset, const absl::Status& status,
                           rpc::ReadObjectChunkReply reply) {
  auto it = pulls_.find(id);
  if (it == pulls_.end()) return;
  Transfer& t = it->second;
  t.in_flight--;
  uint64_t expected = std::min(options_.chunk_bytes, t.size - chunk_offset);
  if (!status.ok() || !reply.found() || reply.data().size() != expected) {
    if (status.ok() && reply.found()) IncrementCounter("object_chunks_dropped_corrupt");
    t.failed = true;
    if (t.in_flight == 0) {
      rpc::ErrorInfo error;
      error.set_type(rpc::OBJECT_LOST);
      error.set_message("object " + id.Hex() + " could not be fetched from " + t.source->address() + ": " +
                        (status.ok() ? "the node no longer has it" : std::string(status.message())));
      Finish(id, error);
    }
    return;
  }
  std::memcpy(arena_->data() + t.offset + chunk_offset, reply.data().data(), reply.data().size());
  t.received += reply.data().size();
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

void ObjectPuller::HandleReadObjectChunk(const rpc::ReadObjectChunkRequest& req, rpc::ReadObjectChunkReply* reply) const {
  const ObjectLocationInArena* loc = store_->Peek(ObjectID::FromBinary(req.object_id()));
  if (!loc || req.offset() < 0 || req.length() < 0 || static_cast<uint64_t>(req.offset() + req.length()) > loc->size) {
    if (loc) IncrementCounter("object_chunk_requests_rejected");
    reply->set_found(false);
    return;
  }
  reply->set_found(true);
  reply->set_data(reinterpret_cast<const char*>(arena_->data() + loc->offset + req.offset()),
                  static_cast<size_t>(req.length()));
}

}  // namespace orb
