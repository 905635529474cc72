#include "core/task_returns.h"

#include <stdexcept>

#include "core/object_table.h"

namespace orb {
namespace {

// The task running on this thread (its num_returns) and what it handed over: the
// innermost ReturnsScope's state.
thread_local ReturnsScope::State* running = nullptr;

}  // namespace

int NumReturns(const rpc::TaskSpec& spec) { return spec.num_returns() > 1 ? spec.num_returns() : 1; }

ObjectID ReturnId(const rpc::TaskSpec& spec, int index) {
  if (index == 1) return ObjectID::FromBinary(spec.return_id());
  return ObjectID::ForTaskReturn(TaskID::FromBinary(spec.task_id()), static_cast<uint32_t>(index));
}

std::vector<ObjectID> ReturnIds(const rpc::TaskSpec& spec) {
  std::vector<ObjectID> ids;
  int n = NumReturns(spec);
  ids.reserve(n);
  for (int i = 1; i <= n; ++i) ids.push_back(ReturnId(spec, i));
  return ids;
}

ReturnsScope::ReturnsScope(const rpc::TaskSpec& spec) {
  state_.spec = &spec;
  state_.outer = running;
  running = &state_;
}

ReturnsScope::~ReturnsScope() { running = state_.outer; }

std::vector<internal::ReturnData> ReturnsScope::TakeMore() { return std::move(state_.more); }

const rpc::TaskSpec* RunningTaskSpec() { return running ? running->spec : nullptr; }

int64_t NextGeneratorItemIndex() { return running ? running->items++ : 0; }

void SetReturnsReady(ObjectTable* objects, const rpc::TaskSpec& spec, rpc::ObjectValue value, MoreReturnValues more) {
  int n = NumReturns(spec);
  if (n == 1) return objects->SetReady(ObjectID::FromBinary(spec.return_id()), std::move(value));
  if (!value.has_error() && more.size() < n - 1) {
    // Each value handed back holds its refs until completed: let them go with it.
    rpc::ObjectValue error;
    error.mutable_error()->set_type(rpc::TASK_ERROR);
    error.mutable_error()->set_message("task '" + spec.function_name() + "' has num_returns=" + std::to_string(n) +
                                       " but its worker handed back " + std::to_string(more.size() + 1) + " value(s)");
    objects->SetReady(ReturnId(spec, 1), std::move(value));
    for (int i = 0; i < more.size(); ++i) objects->SetReady(ReturnId(spec, i + 2), std::move(more[i]));
    for (int i = more.size() + 2; i <= n; ++i) objects->SetReady(ReturnId(spec, i), error);
    return;
  }
  if (value.has_error()) {
    for (int i = 2; i <= n; ++i) objects->SetReady(ReturnId(spec, i), value);
    return objects->SetReady(ReturnId(spec, 1), std::move(value));
  }
  for (int i = 0; i < n - 1; ++i) objects->SetReady(ReturnId(spec, i + 2), std::move(more[i]));
  objects->SetReady(ReturnId(spec, 1), std::move(value));
}

namespace internal {

int CurrentTaskNumReturns() { return running ? NumReturns(*running->spec) : 1; }

bool CurrentTaskStreams() { return running && running->spec->streaming(); }

bool CurrentTaskRetriesErrors(std::string* allowlist) {
  if (!running || !running->spec->retry_exceptions()) return false;
  *allowlist = running->spec->retry_exception_allowlist();
  return true;
}

void MarkRetryableError() {
  if (running) running->retryable_error = true;
}

void SetMoreReturns(std::vector<ReturnData> values) {
  if (!running) throw std::logic_error("SetMoreReturns outside a running task");
  running->more = std::move(values);
}

}  // namespace internal
}  // namespace orb
