// Copies objects held by other nodes into this node's store, in chunks.
//
// A pull creates space for the object here, asks the source node's object stream for
// byte ranges of `chunk_bytes` (several in flight, each received straight into the
// arena; see object_stream_protocol.h), and seals the copy when every range is in. The copy is secondary: evictable once no reader has
// it pinned. Pulls of one object that overlap share one transfer; each waiter gets the
// object pinned for it.
//
// A chunk the source could not serve for now (busy, or a connection that broke) is asked
// for again, backing off, up to kMaxChunkRetries times. A source that no longer has the
// object, stays unreachable, or is declared dead (SourceDead: the transfer ends at
// once, not when its sockets time out) fails the pull with OBJECT_LOST. Runs on the
// raylet's event loop; not thread-safe.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <unordered_map>
#include <vector>

#include "common/event_loop.h"
#include "common/id.h"
#include "common/shm_arena.h"
#include "raylet/object_manager/object_stream_client.h"
#include "raylet/object_store/local_object_store.h"
#include "raylet_service.grpc.pb.h"

namespace orb {

struct ObjectPullerOptions {
  uint64_t chunk_bytes = 8ull << 20;
  int chunks_in_flight = 4;  // per transfer; fetch threads: twice that
  std::string token;
};

// A pull that completed, for the timeline.
struct CompletedPull {
  ObjectID id;
  std::string source_stream;
  uint64_t bytes = 0;
  int64_t start_ns = 0, end_ns = 0;  // Unix nanoseconds
};

class ObjectPuller {
 public:
  ObjectPuller(LocalObjectStore* store, ShmArena* arena, EventLoop* loop, ObjectPullerOptions options);

  // `done(location, error)`: the object is sealed here and pinned for `reader`, or not.
  // `source_stream` is the holder's object stream address ("ip:port").
  using Done = std::function<void(const ObjectLocationInArena&, const rpc::ErrorInfo&)>;
  // `owner`: the object's owner when known (the copy is freed if it dies), else nil.
  void Pull(const ObjectID& id, uint64_t size, const std::string& source_stream, const WorkerID& reader,
            const WorkerID& owner, Done done);

  // The node serving objects at `source_stream` was declared dead: its pulls fail now.
  void SourceDead(const std::string& source_stream, const std::string& why);

  size_t pulls_in_progress() const { return pulls_.size(); }
  uint64_t bytes_pulled_total() const { return bytes_pulled_total_; }
  uint64_t pulls_total() const { return pulls_total_; }
  uint64_t pull_failures_total() const { return pull_failures_total_; }
  // The pulls completed since the last call (at most kMaxCompleted are kept).
  std::vector<CompletedPull> TakeCompleted() { return std::exchange(completed_, {}); }
  static constexpr size_t kMaxCompleted = 10000;

 private:
  struct Waiter {
    WorkerID reader;
    Done done;
  };
  struct Transfer {
    uint64_t size = 0;
    uint64_t offset = 0;  // where in the arena
    uint64_t next_chunk = 0;
    uint64_t received = 0;
    int in_flight = 0;
    int retries = 0;        // chunks asked for again, in all
    bool retry_due = false;  // RequestChunks is scheduled after a back-off
    std::vector<std::pair<uint64_t, uint64_t>> again;  // chunks (offset, length) to ask for again
    absl::Status failure;  // the first chunk that failed for good
    std::string source;    // the holder's object stream
    int64_t start_ns = 0;
    std::vector<Waiter> waiters;
  };

  static constexpr int kMaxChunkRetries = 20;

  void RequestChunks(const ObjectID& id);
  void Fetch(const ObjectID& id, Transfer& t, uint64_t chunk_offset, uint64_t length);
  void FailIfIdle(const ObjectID& id);
  void OnChunk(const ObjectID& id, uint64_t chunk_offset, uint64_t length, const absl::Status& status);
  void Finish(const ObjectID& id, const rpc::ErrorInfo& error);

  LocalObjectStore* store_;
  ShmArena* arena_;
  EventLoop* loop_;
  ObjectPullerOptions options_;
  std::unordered_map<ObjectID, Transfer> pulls_;
  uint64_t bytes_pulled_total_ = 0, pulls_total_ = 0, pull_failures_total_ = 0;
  std::vector<CompletedPull> completed_;
  ObjectStreamClient stream_;  // last: its threads stop before the rest goes
};

}  // namespace orb
