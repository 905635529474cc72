// The web dashboard the head serves (gcs_server --dashboard-port): a page without a
// build step (static/, compiled into the binary) and the JSON it reads under /api/ —
// the state API's rows (common/state_client.h), a summary for the overview and charts,
// and nodes' log files. /api/ wants the cluster token or the dashboard's read-only one
// (`Authorization: Bearer TOKEN`, or `?token=`); the page itself is public and holds no
// data.
#pragma once

#include <string>

#include "common/http_endpoint.h"

namespace orb {

struct DashboardOptions {
  std::string gcs_address;      // where the dashboard's GCS serves RPCs (it reads through them)
  std::string token;            // the cluster's; empty: /api/ is open
  std::string read_only_token;  // also accepted by /api/ (it only reads); empty: none
};

// Adds the dashboard's routes to `endpoint` (before it starts).
void AddDashboardRoutes(HttpEndpoint* endpoint, const DashboardOptions& options);

}  // namespace orb
