// What the conformance tests share: the command line, and whether they run on a
// cluster someone started (ORB_ADDRESS) or on the embedded default.
#pragma once

#include <orb/api.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

extern int cmd_argc;
extern char** cmd_argv;

// ORB_ADDRESS names a running cluster (2 nodes in conformance_test.sh).
inline bool OnStartedCluster() {
  const char* address = std::getenv("ORB_ADDRESS");
  return address && *address;
}

// Joins the cluster of this run (the embedded default, or ORB_ADDRESS).
inline void InitForTest(orb::OrbConfig config = orb::OrbConfig()) {
  if (!orb::IsInitialized()) orb::Init(config, cmd_argc, cmd_argv);
}

// Runs this program again as a second driver of the cluster at `address` (another
// job), which calls RunSecondDriver(role, address); its exit status.
int RunAsSecondDriver(const std::string& role, const std::string& address);
// Defined by a test that needs a second driver; the default says there is none.
int RunSecondDriver(const std::string& role, const std::string& address);

inline bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}
