// Workers that load the job's functions from shared libraries (code_search_path) and
// run as the default worker binary instead of the driver's executable.
#include <catch2/catch.hpp>
#include <filesystem>

#include "remote_lib/remote_functions.h"
#include "test_cluster.h"

TEST_CASE("functions in a code_search_path library run on default workers", "[code_search_path]") {
  orb::Config config;
  config.num_cpus = 1;
  config.code_search_path = {ORB_TEST_REMOTE_LIB_DIR};
  orb::testing::EnsureCluster(config);
  CHECK(*orb::Task(Square).Remote(12).Get(60000) == 144);
  CHECK(*orb::Task(Shout).Remote(std::string("orb")).Get(60000) == "ORB!");
}
