#include "common/daemon_launcher.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <thread>

#include "common/process.h"
#include "common/session.h"

namespace fs = std::filesystem;

namespace orb {

std::string FindOrbBinary(const std::string& name) {
  std::vector<std::string> candidates;
  if (const char* dir = std::getenv("ORB_BIN_DIR"); dir && *dir) candidates.push_back(std::string(dir) + "/" + name);
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&FindOrbBinary), &info) && info.dli_fname) {
    fs::path lib = fs::weakly_canonical(fs::path(info.dli_fname));
    candidates.push_back((lib.parent_path().parent_path() / "bin" / name).string());
    candidates.push_back((lib.parent_path() / name).string());
  }
#ifdef ORB_INSTALL_BINDIR
  candidates.push_back(std::string(ORB_INSTALL_BINDIR) + "/" + name);
#endif
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':')) {
      if (!dir.empty()) candidates.push_back(dir + "/" + name);
    }
  }
  for (const auto& c : candidates) {
    if (::access(c.c_str(), X_OK) == 0 && fs::is_regular_file(c)) return c;
  }
  return "";
}

absl::StatusOr<DaemonStart> StartDaemon(const std::vector<std::string>& argv, const std::string& output_path,
                                        bool die_with_parent, std::chrono::milliseconds timeout) {
  ProcessOptions process;
  process.argv = argv;
  process.output_path = output_path;
  process.die_with_parent = die_with_parent;
  process.new_process_group = true;  // a Ctrl-C in the terminal goes to the program, not the daemons
  auto pid = SpawnProcess(process);
  if (!pid.ok()) return pid.status();
  auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string marker = "listening on ";
  while (std::chrono::steady_clock::now() < deadline) {
    auto text = ReadFileToString(output_path);
    if (text.ok()) {
      auto pos = text->find(marker);
      if (pos != std::string::npos) {
        auto end = text->find_first_of(" \n", pos + marker.size());
        if (end != std::string::npos) return DaemonStart{*pid, text->substr(pos + marker.size(), end - pos - marker.size())};
      }
    }
    if (!IsProcessAlive(*pid)) {
      std::string why = text.ok() ? *text : "";
      return absl::UnavailableError(fs::path(argv[0]).filename().string() + " exited at start: " + why);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  StopProcess(*pid, std::chrono::milliseconds(100));
  return absl::DeadlineExceededError(fs::path(argv[0]).filename().string() + " did not start within " +
                                     std::to_string(timeout.count()) + " ms (see " + output_path + ")");
}

}  // namespace orb
