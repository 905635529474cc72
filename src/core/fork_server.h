// The worker side of a job's fork server (common/fork_server_protocol.h).
#pragma once

#include <string>

namespace orb {

// Serves fork requests on the Unix socket at `socket_path` for as long as the raylet
// lives. Returns only in a forked worker, with its environment, directory and output
// set as asked: the caller goes on to run as that worker. Exits when it cannot serve
// (this process already runs threads, so forking it would not be safe).
void RunForkServer(const std::string& socket_path);

}  // namespace orb
