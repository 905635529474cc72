// Helpers for integration tests: one embedded cluster per test binary, and waiting on
// conditions with a deadline (never fixed sleeps).
#pragma once

#include "orb/api.h"
#include "wait_for.h"

namespace orb::testing {

// Starts the embedded cluster on first use with `config`; later calls reuse it.
inline void EnsureCluster(const Config& config = Config()) {
  if (!orb::IsInitialized()) orb::Init(config);
}

}  // namespace orb::testing
