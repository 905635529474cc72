// A local cluster that a program starts for itself when Init() is given no address:
// one gcs_server and one raylet, as child processes in a fresh session directory.
// They die with the program (PR_SET_PDEATHSIG) and stop at Shutdown().
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "orb/config.h"

namespace orb {

class EmbeddedCluster {
 public:
  static absl::StatusOr<std::unique_ptr<EmbeddedCluster>> Start(const Config& config);
  ~EmbeddedCluster();  // stops the raylet (and with it every worker), then the GCS

  const std::string& gcs_address() const { return gcs_address_; }
  const std::string& token() const { return token_; }
  const std::string& session_dir() const { return session_dir_; }

 private:
  EmbeddedCluster() = default;
  std::string session_dir_;
  std::string gcs_address_;
  std::string token_;
  pid_t gcs_pid_ = 0;
  pid_t raylet_pid_ = 0;
};

}  // namespace orb
