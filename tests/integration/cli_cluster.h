// A cluster of several nodes on this machine, started with the CLI as a user would
// (`orb start --head`, then `orb start --address ...`), with this test process as its
// driver. Stopped with `orb stop` when destroyed.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "test_cluster.h"

namespace orb::testing {

// Runs a shell command; its standard output. Fails the test if it fails.
inline std::string Run(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe);
  char buf[512];
  while (std::fgets(buf, sizeof(buf), pipe)) out += buf;
  REQUIRE(::pclose(pipe) == 0);
  return out;
}

// Runs a shell command; its standard output, whatever its exit status.
inline std::string RunAnyway(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe);
  char buf[512];
  while (std::fgets(buf, sizeof(buf), pipe)) out += buf;
  ::pclose(pipe);
  return out;
}

class CliCluster {
 public:
  // `head_flags` for `orb start --head`, then one `orb start --address` per entry of
  // `node_flags`. Waits until the GCS lists every node.
  CliCluster(const std::string& tag, const std::string& head_flags, const std::vector<std::string>& node_flags) {
    orb_ = std::string(std::getenv("ORB_BIN_DIR")) + "/orb";
    temp_ = std::filesystem::temp_directory_path() / ("orb-" + tag + "-" + std::to_string(::getpid()));
    ::setenv("ORB_TEMP_DIR", temp_.c_str(), 1);
    std::string head = Run(orb_ + " start --head --port 0 " + head_flags);
    auto pos = head.find("GCS address:");
    REQUIRE(pos != std::string::npos);
    address_ = head.substr(pos + 12);
    address_ = address_.substr(address_.find_first_not_of(' '));
    address_ = address_.substr(0, address_.find('\n'));
    for (const auto& flags : node_flags) Run(orb_ + " start --address " + address_ + " " + flags);
    orb::Config config;
    config.address = address_;
    orb::Init(config);
    size_t expected = node_flags.size() + 1;
    REQUIRE(WaitFor([&] { return orb::Nodes().size() == expected; }, std::chrono::seconds(10)));
  }
  ~CliCluster() {
    orb::Shutdown();
    std::system((orb_ + " stop > /dev/null").c_str());
    if (!std::getenv("ORB_KEEP_TEST_TEMP")) std::filesystem::remove_all(temp_);
  }
  CliCluster(const CliCluster&) = delete;
  CliCluster& operator=(const CliCluster&) = delete;

  std::string orb_, address_;
  std::filesystem::path temp_;
};

}  // namespace orb::testing
