#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "common/session.h"
#include "common/shm_arena.h"

namespace fs = std::filesystem;

namespace orb::cli {
namespace {

enum class Kind { kNone, kAutoscaler, kWorker, kRaylet, kGcs };

struct OrbProcess {
  Kind kind = Kind::kNone;
  std::string session;  // its session directory, when it says
};

std::vector<std::string> NulSeparated(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> parts;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, '\0')) parts.push_back(part);
  return parts;
}

std::string ValueAfter(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) return args[i + 1];
  }
  return "";
}

// What orb process `pid` is, from its command line (and, for a worker, the session its
// raylet gave it); kNone for anything else or another user's process.
OrbProcess Classify(pid_t pid) {
  struct stat st;
  std::string dir = "/proc/" + std::to_string(pid);
  if (::stat(dir.c_str(), &st) != 0 || st.st_uid != ::getuid()) return {};
  std::vector<std::string> args = NulSeparated(dir + "/cmdline");
  if (args.empty()) return {};
  std::string exe = fs::path(args[0]).filename().string();
  for (const auto& a : args) {
    if (a != "--orb-worker-mode") continue;
    for (const auto& e : NulSeparated(dir + "/environ")) {
      if (e.rfind("ORB_SESSION_DIR=", 0) == 0) return {Kind::kWorker, e.substr(16)};
    }
    return {Kind::kWorker, ""};
  }
  if (exe == "raylet" && args.size() > 1 && args[1] == "--gcs-address") {
    return {Kind::kRaylet, ValueAfter(args, "--session-dir")};
  }
  if (exe == "orb_autoscaler") return {Kind::kAutoscaler, ValueAfter(args, "--session-dir")};
  if (exe == "gcs_server") return {Kind::kGcs, fs::path(ValueAfter(args, "--token-file")).parent_path().string()};
  return {};
}

// The processes of `kind` whose session is in scope.
std::vector<pid_t> Find(Kind kind, const std::function<bool(const std::string& session)>& in_scope) {
  std::vector<pid_t> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = std::stoi(name);
    if (pid == ::getpid()) continue;
    OrbProcess process = Classify(pid);
    if (process.kind == kind && in_scope(process.session)) pids.push_back(pid);
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

int Stop(const StopOptions& options) {
  // Whose processes: every orb process of this user (--all), the cluster at --address,
  // or (by default) the clusters whose sessions live under this temp root.
  std::string scope_text;
  std::function<bool(const std::string&)> in_scope;
  if (options.all) {
    scope_text = "of this user";
    in_scope = [](const std::string&) { return true; };
  } else if (!options.address.empty()) {
    std::string session = FindSessionForAddress(options.address);
    if (session.empty()) {
      std::cerr << "orb stop: no local session serves " << options.address << " (under " << TempRoot() << ")\n";
      return 1;
    }
    scope_text = "of the cluster at " + options.address;
    std::string canonical = fs::weakly_canonical(session).string();
    in_scope = [canonical](const std::string& s) { return !s.empty() && fs::weakly_canonical(s).string() == canonical; };
  } else {
    std::string root = fs::weakly_canonical(TempRoot()).string() + "/";
    scope_text = "under " + TempRoot();
    in_scope = [root](const std::string& s) { return !s.empty() && (fs::weakly_canonical(s).string() + "/").rfind(root, 0) == 0; };
  }
  int stopped = 0;
  // The autoscaler first (it would replace nodes), then raylets (they stop their
  // workers), then stray workers, then the GCS.
  for (Kind kind : {Kind::kAutoscaler, Kind::kRaylet, Kind::kWorker, Kind::kGcs}) {
    std::vector<pid_t> pids = Find(kind, in_scope);
    for (pid_t p : pids) ::kill(p, options.force ? SIGKILL : SIGTERM);
    if (!WaitGone(pids, std::chrono::milliseconds(options.force ? 1000 : 5000))) {
      for (pid_t p : pids) ::kill(p, SIGKILL);
      WaitGone(pids, std::chrono::milliseconds(2000));
    }
    stopped += static_cast<int>(pids.size());
  }
  // Workers a raylet started but that outlived it.
  std::vector<pid_t> strays = Find(Kind::kWorker, in_scope);
  for (pid_t p : strays) ::kill(p, SIGKILL);
  stopped += static_cast<int>(strays.size());
  int files = ShmArena::RemoveStaleArenas();
  int sockets = RemoveStaleSockets(TempRoot() + "/sockets");
  std::cout << "Stopped " << stopped << " orb process(es) " << scope_text;
  if (files > 0) std::cout << "; removed " << files << " object store file(s) of killed raylets";
  if (sockets > 0) std::cout << "; removed " << sockets << " stale worker socket(s)";
  std::cout << ".\n";
  return 0;
}

}  // namespace orb::cli
