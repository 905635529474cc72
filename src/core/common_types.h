// Protobuf types the core worker uses internally (never in public headers).
#pragma once

#include "common.pb.h"

namespace orb {

// What a submitter did with orb::Cancel: the task is not one of its own unfinished ones,
// it was taken out of a queue (its result is now TASK_CANCELLED), or it was pushed to
// `worker`, which must be told.
struct CancelOutcome {
  enum Kind { kNotFound, kDequeued, kOnWorker } kind = kNotFound;
  rpc::Address worker;
};

}  // namespace orb
