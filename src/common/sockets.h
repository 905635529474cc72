// Plain stream sockets for orb's own protocols (the object stream, the call stream):
// listening on TCP or a Unix socket, connecting without blocking, writing all of a buffer.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace orb {

struct Listener {
  int fd = -1;
  int port = 0;  // the bound TCP port (0 for a Unix socket)
};

// Listens on `ip`:`port` (0: any free port). `what` names the server in errors.
absl::StatusOr<Listener> ListenTcp(const std::string& ip, int port, const std::string& what);
// Listens on a Unix socket at `path` (replacing a stale file), readable by its owner only.
absl::StatusOr<Listener> ListenUnix(const std::string& path, const std::string& what);

// Starts connecting to "unix:<path>" or "<ip>:<port>"; the socket is non-blocking and
// may still be connecting (wait for it to become writable, then ask SocketError).
absl::StatusOr<int> ConnectNonBlocking(const std::string& endpoint);
// The pending error of a socket (0 when none).
int SocketError(int fd);

// TCP_NODELAY, and keepalive probes that fail the connection to a peer that stopped
// answering within about `dead_after_seconds`. No-op on a Unix socket.
void ConfigureTcp(int fd, int dead_after_seconds);

// Blocking, all or nothing, without SIGPIPE: false when the peer closed, an error or a
// socket timeout.
bool WriteAll(int fd, const void* data, size_t bytes);
bool ReadAll(int fd, void* data, size_t bytes);

}  // namespace orb
