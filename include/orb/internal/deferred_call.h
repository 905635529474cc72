// An actor call whose result comes later: the code a concurrent actor's call runs (a
// Python async actor's method, whose coroutine runs on the actor's event loop) may take
// the call over with DeferCurrentCall() instead of returning its result. The worker
// thread that ran it is then free for the next call — a call in flight holds no thread —
// and whoever finishes the call completes it, once, from any thread; the call still
// counts against the actor's max_concurrency until then. orb::Cancel of a deferred call
// interrupts it by its token (FunctionRegistry::Interrupt(token, /*actor_call=*/true)).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "orb/internal/runtime.h"

namespace orb::internal {

class DeferredCall {
 public:
  virtual ~DeferredCall() = default;
  // Unique in this process, never a thread's ID: what a cancel of the call is sent to.
  virtual uint64_t token() const = 0;
  // The call's result, serialized, with the ObjectRefs serialized in it (held once each).
  virtual void Complete(std::string output, std::vector<RefData> refs) = 0;
  // The call ended the actor on purpose (orb::ExitActor, Python's exit_actor()).
  virtual void CompleteWithActorExit() = 0;
  // The call failed outside the user's code (or was cancelled): `message` says how.
  virtual void Fail(const std::string& message) = 0;
};

// Inside a call that may finish later (a concurrent actor's call on its pool): takes the
// call over; what the call's code returns is then ignored. Null when the running call
// cannot be deferred (a task, an actor running calls one at a time).
std::shared_ptr<DeferredCall> DeferCurrentCall();

}  // namespace orb::internal
