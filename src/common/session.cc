#include "common/session.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/id.h"

namespace fs = std::filesystem;

namespace orb {

std::string TempRoot() {
  const char* env = std::getenv("ORB_TEMP_DIR");
  return env && *env ? env : "/tmp/orb-" + std::to_string(::getuid());
}

namespace {

// The temp root exists, belongs to this user and is closed to everyone else.
absl::Status PrepareTempRoot(const std::string& root) {
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    fs::create_directories(root, ec);
    if (ec) return absl::PermissionDeniedError("cannot create " + root + ": " + ec.message());
    ::chmod(root.c_str(), 0700);
  }
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) return absl::PermissionDeniedError("cannot read " + root);
  if (st.st_uid != ::getuid()) {
    return absl::PermissionDeniedError(root + " belongs to another user (uid " + std::to_string(st.st_uid) +
                                       "); set ORB_TEMP_DIR to a directory of your own");
  }
  if ((st.st_mode & 077) != 0) ::chmod(root.c_str(), st.st_mode & ~mode_t{077});
  return absl::OkStatus();
}

}  // namespace

int RemoveStaleSockets(const std::string& dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_socket(ec)) continue;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::string path = entry.path().string();
    if (path.size() >= sizeof(addr.sun_path)) continue;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    bool stale = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno == ECONNREFUSED;
    ::close(fd);
    if (stale && ::unlink(path.c_str()) == 0) ++removed;
  }
  return removed;
}

absl::StatusOr<std::string> CreateSessionDir(SessionKind kind) {
  std::time_t now = std::time(nullptr);
  char stamp[64];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d_%H-%M-%S", std::localtime(&now));
  std::string base = TempRoot() + "/session_" + stamp + "_" + std::to_string(getpid());
  std::error_code ec;
  if (auto s = PrepareTempRoot(TempRoot()); !s.ok()) return s;
  // A program that starts orb twice within a second gets a second directory: daemons'
  // output files (read for their "listening on" lines) must not be the first one's.
  std::string dir = base;
  for (int n = 2; !fs::create_directory(dir, ec); ++n) {
    if (ec || n > 1000) {
      return absl::PermissionDeniedError("cannot create session directory " + dir + ": " +
                                         (ec ? ec.message() : std::string("too many with this name")));
    }
    dir = base + "-" + std::to_string(n);
  }
  ::chmod(dir.c_str(), 0700);
  fs::create_directories(dir + "/logs", ec);
  if (ec) return absl::PermissionDeniedError("cannot create session directory " + dir + ": " + ec.message());
  if (kind == SessionKind::kEmbedded) {
    // A program's own cluster: `orb status` and friends keep finding the running head.
    WriteStringToFile(dir + "/embedded", "", 0600).IgnoreError();
    return dir;
  }
  std::string link = TempRoot() + "/session_latest";
  fs::remove(link, ec);
  fs::create_directory_symlink(dir, link, ec);
  return dir;
}

std::string GenerateToken() {
  uint8_t bytes[32];
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  if (!urandom.read(reinterpret_cast<char*>(bytes), sizeof(bytes))) id_internal::FillRandom(bytes, sizeof(bytes));
  return id_internal::ToHex(bytes, sizeof(bytes));
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot read " + path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

absl::Status WriteStringToFile(const std::string& path, const std::string& contents, int mode) {
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return absl::PermissionDeniedError("cannot write " + tmp);
    ::chmod(tmp.c_str(), mode);
    out << contents;
    if (!out.flush()) return absl::DataLossError("short write to " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return absl::PermissionDeniedError("cannot rename to " + path);
  return absl::OkStatus();
}

std::string FindSessionForAddress(const std::string& gcs_address) {
  std::error_code ec;
  std::string best;
  fs::file_time_type best_time;
  for (const auto& entry : fs::directory_iterator(TempRoot(), ec)) {
    if (entry.path().filename().string().rfind("session_2", 0) != 0) continue;
    auto address = ReadFileToString(entry.path().string() + "/address");
    if (!address.ok() || *address != gcs_address) continue;
    auto time = fs::last_write_time(entry.path(), ec);
    if (best.empty() || time > best_time) {
      best = entry.path().string();
      best_time = time;
    }
  }
  return best;
}

std::string FindTokenForAddress(const std::string& gcs_address) {
  const char* env = std::getenv("ORB_TOKEN");
  if (env && *env) return env;
  std::string session = FindSessionForAddress(gcs_address);
  if (session.empty()) return "";
  auto token = ReadFileToString(session + "/token");
  return token.ok() ? *token : "";
}

namespace {

// The session's GCS address if its GCS still runs, else empty.
std::string LiveAddress(const std::string& session) {
  auto address = ReadFileToString(session + "/address");
  if (!address.ok()) return "";
  auto pid = ReadFileToString(session + "/gcs.pid");
  if (!pid.ok() || ::kill(std::atoi(pid->c_str()), 0) != 0) return "";
  return *address;
}

}  // namespace

std::string FindLocalClusterAddress() {
  std::string latest = LiveAddress(TempRoot() + "/session_latest");
  if (!latest.empty()) return latest;
  // The newest head session whose GCS runs (the latest one was stopped).
  std::error_code ec;
  std::string best, best_address;
  fs::file_time_type best_time;
  for (const auto& entry : fs::directory_iterator(TempRoot(), ec)) {
    std::string session = entry.path().string();
    if (entry.path().filename().string().rfind("session_2", 0) != 0 || fs::exists(session + "/embedded", ec)) continue;
    std::string address = LiveAddress(session);
    auto time = fs::last_write_time(entry.path(), ec);
    if (!address.empty() && (best.empty() || time > best_time)) {
      best = session;
      best_address = address;
      best_time = time;
    }
  }
  return best_address;
}

absl::Status ParseAddress(const std::string& address, std::string* host, int* port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return absl::InvalidArgumentError("address '" + address + "' is not HOST:PORT");
  }
  char* end = nullptr;
  long p = std::strtol(address.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || p <= 0 || p > 65535) {
    return absl::InvalidArgumentError("address '" + address + "' has an invalid port");
  }
  *host = address.substr(0, colon);
  *port = static_cast<int>(p);
  return absl::OkStatus();
}

std::string NodeIpFor(const std::string& gcs_address) {
  if (const char* ip = std::getenv("ORB_NODE_IP"); ip && *ip) return ip;
  std::string host;
  int port = 0;
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  if (!ParseAddress(gcs_address, &host, &port).ok() || ::inet_pton(AF_INET, host.c_str(), &remote.sin_addr) != 1) {
    return "127.0.0.1";
  }
  remote.sin_port = htons(static_cast<uint16_t>(port));
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return "127.0.0.1";
  std::string ip = "127.0.0.1";
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  char text[INET_ADDRSTRLEN] = {0};
  // Connecting a UDP socket only picks the route and source address.
  if (::connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof(remote)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
      ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)) != nullptr) {
    ip = text;
  }
  ::close(fd);
  return ip;
}

}  // namespace orb
