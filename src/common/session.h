// Session directories, cluster tokens and how a client finds them.
//
// A head node creates a session directory under the temp root ($ORB_TEMP_DIR, default
// /tmp/orb): `session_<time>_<pid>/` with `logs/`, `token` (mode 0600), `address` (the
// GCS address) and `storage/` (the GCS's RocksDB). `session_latest` links to the newest.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace orb {

std::string TempRoot();
absl::StatusOr<std::string> CreateSessionDir();
// A fresh 256-bit token as 64 hex digits.
std::string GenerateToken();

absl::StatusOr<std::string> ReadFileToString(const std::string& path);
// Writes atomically (temp file + rename) with the given permission bits.
absl::Status WriteStringToFile(const std::string& path, const std::string& contents, int mode = 0644);

// The session directory whose `address` file names `gcs_address`, or empty.
std::string FindSessionForAddress(const std::string& gcs_address);
// Token for a cluster: $ORB_TOKEN, else the token file of the local session that serves
// `gcs_address`, else empty.
std::string FindTokenForAddress(const std::string& gcs_address);
// The GCS address of the newest local session that still has a live GCS, or empty.
std::string FindLocalClusterAddress();

// Splits "host:port"; InvalidArgument names the malformed address.
absl::Status ParseAddress(const std::string& address, std::string* host, int* port);

// The address of this machine that reaches `gcs_address` (the source address the
// kernel would route from; nothing is sent): what a driver advertises to the cluster.
// $ORB_NODE_IP overrides it; 127.0.0.1 when the route cannot be found.
std::string NodeIpFor(const std::string& gcs_address);

}  // namespace orb
