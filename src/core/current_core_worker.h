// The process's CoreWorker, for parts of liborb built on it (collectives). Throws
// orb::Error before orb::Init.
#pragma once

#include "core/core_worker.h"

namespace orb::internal {

CoreWorker& CurrentCoreWorker();

}  // namespace orb::internal
