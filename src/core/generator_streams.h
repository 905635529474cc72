// The owner's side of streaming generator tasks (Python's num_returns="streaming"):
// the items each task has yielded so far, in order, for its reader (an
// ObjectRefGenerator) to take one by one while the task still runs.
//
// The worker running the task reports each item as it is yielded (ReportGeneratorItem,
// one at a time, each answered before the next is made), so every item is here before
// the task's own result — which counts them, or is the error that ended the stream —
// reaches this process. Item i is the owned object ForTaskReturn(task, 2 + i), held here
// until the reader takes it. A retried task reports from item 0 again: items already
// here are not duplicated. With backpressure N, the answer to an item is held while N
// items wait unread, which pauses the generator until its reader catches up. A reader
// that goes away (Drop) lets its unread items go and releases the generator, which runs
// on to its end with each later item let go at once (as Ray's; orb::Cancel stops it).
// `stop` is true only for a stream this process does not know.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/id.h"
#include "core/common_types.h"
#include "core_worker_service.pb.h"

namespace orb {

class ObjectTable;

class GeneratorStreams {
 public:
  explicit GeneratorStreams(ObjectTable* objects) : objects_(objects) {}

  // A streaming task this process submitted (its returns already pending in objects).
  void Add(const rpc::TaskSpec& spec);
  // An item from the worker running the task; `answer(stop)` replies to it, now or
  // (under backpressure) once the reader has caught up.
  void OnItem(const rpc::ReportGeneratorItemRequest& request, std::function<void(bool stop)> answer);

  enum class Next { kItem, kEnd, kTimedOut, kUnknown };
  // The reader's next item of task `task_id`: kItem with `*item` (its ref's one local
  // reference now the reader's); kEnd when the task ended and every item was taken (its
  // result says how it ended); kTimedOut at `deadline`; kUnknown for a task that is not
  // a streaming task of this process (or whose stream was dropped). `item` null: a peek
  // that takes nothing (kItem: the next item is here; kEnd: the end is).
  Next Read(const std::string& task_id, std::chrono::steady_clock::time_point deadline, ObjectID* item);
  // The reader's next `n` items, read or not, without taking them (Python's
  // _get_next_ref_n): each ID holds one new local reference for the reader. One not
  // here yet is made pending at once and becomes the item when it comes — or, if the
  // task ends first, its error (END_OF_STREAM when it ended well). Empty for a task that
  // is not a stream of this process.
  std::vector<ObjectID> Peek(const std::string& task_id, int64_t n);
  // The reader is gone: unread items go, and a generator held by backpressure goes on.
  void Drop(const std::string& task_id);

  size_t size() const;  // streams kept (for tests)

 private:
  struct Stream {
    rpc::TaskSpec spec;  // task ID, returns and backpressure
    int64_t received = 0;  // items 0..received-1 are here (or were taken)
    int64_t read = 0;      // items the reader took
    int64_t reserved = 0;  // items [received, reserved) were peeked before they came: pending
    bool ended = false;    // the task's result is in
    std::shared_ptr<const rpc::ObjectValue> result;  // that result (its error, when it failed)
    bool dropped = false;  // the reader went away
    std::vector<std::function<void(bool)>> held_answers;  // items answered once the reader catches up
  };
  void OnEnded(const std::string& task_id, const std::shared_ptr<const rpc::ObjectValue>& result);
  // The value of an item peeked that will never come: the task's error, or END_OF_STREAM.
  static rpc::ObjectValue NeverCame(const Stream& stream);
  // Lets go of the holds on items peeked that never came. REQUIRES: mu_ held.
  void ReleaseReserved(const std::string& task_id, Stream& stream, std::vector<ObjectID>* released);

  ObjectTable* objects_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, Stream> streams_;  // by task ID; guarded by mu_
};

}  // namespace orb
