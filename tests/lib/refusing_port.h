// A loopback port that refuses connections, for tests whose peers must fail at once
// (connection refused) instead of waiting on the network.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>

namespace orb::testing {

// Bound on 127.0.0.1 and never listened on (the socket is kept open for the process's
// life, so the port is not handed out again).
inline int RefusingPort() {
  static int port = [] {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      std::abort();
    }
    return static_cast<int>(ntohs(addr.sin_port));
  }();
  return port;
}

}  // namespace orb::testing
