// Session directories, cluster tokens and how a client finds them.
//
// A head node creates a session directory under the temp root ($ORB_TEMP_DIR, default
// /tmp/orb-<uid>: one per user, mode 0700, so no other local user reads its logs,
// tokens or tables): `session_<time>_<pid>/` (mode 0700) with `logs/`, `token` (0600),
// `address` (the GCS address) and `storage/` (the GCS's RocksDB). `session_latest`
// links to the newest head's session; a program's embedded cluster does not move it
// (its session holds a file `embedded`).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace orb {

std::string TempRoot();
enum class SessionKind { kHead, kEmbedded };
// Creates a session directory (and the temp root, if needed, only readable by this
// user); PermissionDenied when the temp root belongs to someone else.
absl::StatusOr<std::string> CreateSessionDir(SessionKind kind = SessionKind::kHead);
// Unix socket files in `dir` that nothing listens on any more (their process was
// killed): removes them; how many.
int RemoveStaleSockets(const std::string& dir);
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
// The GCS address of the local head session that still has a live GCS (session_latest,
// else the newest such), or empty.
std::string FindLocalClusterAddress();

// Splits "host:port"; InvalidArgument names the malformed address.
absl::Status ParseAddress(const std::string& address, std::string* host, int* port);

// The address of this machine that reaches `gcs_address` (the source address the
// kernel would route from; nothing is sent): what a driver advertises to the cluster.
// $ORB_NODE_IP overrides it; 127.0.0.1 when the route cannot be found.
std::string NodeIpFor(const std::string& gcs_address);

}  // namespace orb
