// A task's returns (num_returns, Ray's multiple returns): which objects they are, how the
// executing worker collects the values beyond its function's own result, and how the
// owner completes them all from one TaskResult.
//
// Return i (1-based) of a task is ObjectID::ForTaskReturn(task, i); the first is the
// spec's `return_id`. A task with num_returns = N > 1 hands returns 2..N to
// internal::SetMoreReturns before its function returns the first (the Python worker
// splits the tuple it returned). A failure — an error value, or a worker that handed
// back too few — completes every return with the same error.
#pragma once

#include <string>
#include <vector>

#include "common/id.h"
#include "core/common_types.h"
#include "orb/internal/runtime.h"

namespace orb {

class ObjectTable;

// The values of returns 2..num_returns (TaskResult::more_values).
using MoreReturnValues = google::protobuf::RepeatedPtrField<rpc::ObjectValue>;

int NumReturns(const rpc::TaskSpec& spec);
// Return `index` (1-based) of the task.
ObjectID ReturnId(const rpc::TaskSpec& spec, int index);
std::vector<ObjectID> ReturnIds(const rpc::TaskSpec& spec);

// While one lives on this thread, the task it names runs here: CurrentTaskNumReturns
// answers its num_returns, and SetMoreReturns collects its values.
class ReturnsScope {
 public:
  explicit ReturnsScope(const rpc::TaskSpec& spec);
  ~ReturnsScope();
  ReturnsScope(const ReturnsScope&) = delete;
  ReturnsScope& operator=(const ReturnsScope&) = delete;
  // What the task handed to SetMoreReturns (taken once).
  std::vector<internal::ReturnData> TakeMore();
  // Whether the task marked its error retryable (internal::MarkRetryableError).
  bool retryable_error() const { return state_.retryable_error; }

  // The running task's state, reached through a thread-local pointer to the innermost scope.
  struct State {
    const rpc::TaskSpec* spec = nullptr;
    std::vector<internal::ReturnData> more;
    State* outer = nullptr;  // the scope this one is nested in, if any
    int64_t items = 0;       // a streaming task's items reported so far
    bool retryable_error = false;
  };

 private:
  State state_;
};

// The task running on this thread (a ReturnsScope's), or null.
const rpc::TaskSpec* RunningTaskSpec();
// A streaming task's next item index (0, 1, ...): counts the items it reported.
int64_t NextGeneratorItemIndex();

// Completes the returns of `spec` in `objects`: `value` the first, `more` the others in
// order. An error value, or fewer values than returns, fails every return alike.
void SetReturnsReady(ObjectTable* objects, const rpc::TaskSpec& spec, rpc::ObjectValue value, MoreReturnValues more);

}  // namespace orb
