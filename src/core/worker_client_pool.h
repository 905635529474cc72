// Client pools of the core worker: other drivers and workers, other nodes' raylets.
#pragma once

#include "common/call_stream_client.h"
#include "common/client_pool.h"
#include "core_worker_service.grpc.pb.h"
#include "raylet_service.grpc.pb.h"

namespace orb {

// Clients of other drivers and workers (pushing tasks, asking owners for objects).
using WorkerClientPool = ClientPool<rpc::CoreWorkerService>;
// Clients of other nodes' raylets (leases spilled back to them).
using RayletClientPool = ClientPool<rpc::RayletService>;
// Call streams to other workers (task pushes and actor calls; common/call_stream_client.h).
using CallStreamClientPool = ClientPoolOf<CallStreamClient>;

}  // namespace orb
