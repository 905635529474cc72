// main() for tests that use the orb API. A test binary is also its own worker binary:
// when a raylet starts it in worker mode, it serves tasks instead of running tests.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>

#include "orb/api.h"

int main(int argc, char** argv) {
  if (const char* mode = std::getenv("ORB_WORKER_MODE"); mode && std::string(mode) == "1") {
    orb::Init(argc, argv);  // never returns
  }
  int result = Catch::Session().run(argc, argv);
  if (orb::IsInitialized()) orb::Shutdown();
  return result;
}
