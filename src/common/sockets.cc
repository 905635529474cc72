#include "common/sockets.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace orb {

absl::StatusOr<Listener> ListenTcp(const std::string& ip, int port, const std::string& what) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(ip.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(what + ": cannot bind to " + ip + ": " + ::gai_strerror(rc));
  }
  int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  bool ok = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 && ::listen(fd, 128) == 0;
  ::freeaddrinfo(found);
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  if (!ok || ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return absl::UnavailableError(what + ": cannot listen on " + ip + ":" + service + ": " + why);
  }
  int bound_port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                                : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return Listener{fd, bound_port};
}

namespace {

bool UnixAddress(const std::string& path, sockaddr_un* address) {
  *address = sockaddr_un{};
  address->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address->sun_path)) return false;
  std::memcpy(address->sun_path, path.data(), path.size());
  return true;
}

}  // namespace

absl::StatusOr<Listener> ListenUnix(const std::string& path, const std::string& what) {
  sockaddr_un address;
  if (!UnixAddress(path, &address)) {
    return absl::InvalidArgumentError(what + ": the socket path '" + path + "' is empty or too long");
  }
  ::unlink(path.c_str());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
            ::chmod(path.c_str(), 0600) == 0 && ::listen(fd, 128) == 0;
  if (!ok) {
    std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return absl::UnavailableError(what + ": cannot listen on " + path + ": " + why);
  }
  return Listener{fd, 0};
}

absl::StatusOr<int> ConnectNonBlocking(const std::string& endpoint) {
  int fd = -1;
  int rc = -1;
  if (endpoint.rfind("unix:", 0) == 0) {
    sockaddr_un address;
    if (!UnixAddress(endpoint.substr(5), &address)) {
      return absl::InvalidArgumentError("bad Unix socket path in '" + endpoint + "'");
    }
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) rc = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  } else {
    size_t colon = endpoint.rfind(':');
    if (colon == std::string::npos) return absl::InvalidArgumentError("'" + endpoint + "' is not ip:port");
    std::string host = endpoint.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (int gai = ::getaddrinfo(host.c_str(), endpoint.c_str() + colon + 1, &hints, &found); gai != 0) {
      return absl::InvalidArgumentError("cannot resolve '" + endpoint + "': " + ::gai_strerror(gai));
    }
    fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) rc = ::connect(fd, found->ai_addr, found->ai_addrlen);
    ::freeaddrinfo(found);
  }
  if (fd < 0 || (rc != 0 && errno != EINPROGRESS && errno != EAGAIN)) {
    std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return absl::UnavailableError("cannot connect to " + endpoint + ": " + why);
  }
  return fd;
}

int SocketError(int fd) {
  int error = 0;
  socklen_t len = sizeof(error);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) return errno;
  return error;
}

void ConfigureTcp(int fd, int dead_after_seconds) {
  sockaddr_storage address{};
  socklen_t len = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len) != 0 || address.ss_family == AF_UNIX) return;
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  int idle = std::max(1, dead_after_seconds / 2);
  int interval = 1;
  int count = std::max(1, dead_after_seconds - idle);
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
  unsigned timeout_ms = static_cast<unsigned>(dead_after_seconds) * 1000;
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout_ms, sizeof(timeout_ms));
}

bool WriteAll(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace orb
