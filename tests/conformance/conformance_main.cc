// main() of every conformance test: as Ray's C++ tests do, keep the command line for
// Init(config, argc, argv) after gtest has taken its flags out of it (which leaves
// null entries behind the new argc: Init must skip them).
#include <gtest/gtest.h>
#include <orb/api.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "conformance.h"

int cmd_argc = 0;
char** cmd_argv = nullptr;

__attribute__((weak)) int RunSecondDriver(const std::string& role, const std::string&) {
  std::fprintf(stderr, "no second driver '%s' in this program\n", role.c_str());
  return 2;
}

int RunAsSecondDriver(const std::string& role, const std::string& address) {
  std::string role_flag = "--second-driver=" + role, address_flag = "--second-driver-address=" + address;
  pid_t child = ::fork();
  if (child == 0) {
    ::execl("/proc/self/exe", "conformance-second-driver", role_flag.c_str(), address_flag.c_str(), nullptr);
    std::_Exit(127);
  }
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char** argv) {
  // A worker process runs this executable too: it serves tasks and never returns.
  if (const char* mode = std::getenv("ORB_WORKER_MODE"); mode && std::string(mode) == "1") orb::Init(argc, argv);
  if (argc == 3 && std::strncmp(argv[1], "--second-driver=", 16) == 0) {
    return RunSecondDriver(argv[1] + 16, std::strchr(argv[2], '=') + 1);
  }
  cmd_argc = argc;
  cmd_argv = argv;
  ::testing::InitGoogleTest(&argc, argv);
  int result = RUN_ALL_TESTS();
  orb::Shutdown();
  return result;
}
