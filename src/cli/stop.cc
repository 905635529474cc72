#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "common/shm_arena.h"

namespace fs = std::filesystem;

namespace orb::cli {
namespace {

enum class Kind { kNone, kWorker, kRaylet, kGcs };

// What orb process `pid` is, from its command line; kNone for anything else or
// another user's process.
Kind Classify(pid_t pid) {
  struct stat st;
  std::string dir = "/proc/" + std::to_string(pid);
  if (::stat(dir.c_str(), &st) != 0 || st.st_uid != ::getuid()) return Kind::kNone;
  std::ifstream in(dir + "/cmdline", std::ios::binary);
  std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::stringstream ss(cmdline);
  std::string arg;
  while (std::getline(ss, arg, '\0')) args.push_back(arg);
  if (args.empty()) return Kind::kNone;
  std::string exe = fs::path(args[0]).filename().string();
  for (const auto& a : args) {
    if (a == "--orb-worker-mode") return Kind::kWorker;
  }
  if (exe == "raylet" && args.size() > 1 && args[1] == "--gcs-address") return Kind::kRaylet;
  if (exe == "gcs_server") return Kind::kGcs;
  return Kind::kNone;
}

std::vector<pid_t> Find(Kind kind) {
  std::vector<pid_t> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = std::stoi(name);
    if (pid != ::getpid() && Classify(pid) == kind) pids.push_back(pid);
  }
  return pids;
}

bool WaitGone(const std::vector<pid_t>& pids, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    bool any = false;
    for (pid_t p : pids) any = any || ::kill(p, 0) == 0;
    if (!any) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

int Stop(bool force) {
  int stopped = 0;
  // Raylets first (they stop their workers), then stray workers, then the GCS.
  for (Kind kind : {Kind::kRaylet, Kind::kWorker, Kind::kGcs}) {
    std::vector<pid_t> pids = Find(kind);
    for (pid_t p : pids) ::kill(p, force ? SIGKILL : SIGTERM);
    if (!WaitGone(pids, std::chrono::milliseconds(force ? 1000 : 5000))) {
      for (pid_t p : pids) ::kill(p, SIGKILL);
      WaitGone(pids, std::chrono::milliseconds(2000));
    }
    stopped += static_cast<int>(pids.size());
  }
  // Workers a raylet started but that outlived it.
  std::vector<pid_t> strays = Find(Kind::kWorker);
  for (pid_t p : strays) ::kill(p, SIGKILL);
  stopped += static_cast<int>(strays.size());
  int files = ShmArena::RemoveStaleArenas();
  std::cout << "Stopped " << stopped << " orb process(es)";
  if (files > 0) std::cout << "; removed " << files << " object store file(s) of killed raylets";
  std::cout << ".\n";
  return 0;
}

}  // namespace orb::cli
