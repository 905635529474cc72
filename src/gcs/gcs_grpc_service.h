// The GCS's gRPC service: each method of GcsService routed to the handler that owns it
// (nodes, jobs and the KV store: GcsHandler; actors: ActorManager; placement groups:
// PlacementGroupManager).
#pragma once

#include "common/rpc_server.h"
#include "gcs/gcs_handler.h"
#include "gcs_service.grpc.pb.h"

namespace orb::gcs {

class GcsGrpcService : public RpcService {
 public:
  GcsGrpcService(GcsHandler* handler, ServiceContext context)
      : RpcService(rpc::GcsService::service_full_name(), std::move(context)), handler_(handler) {}
  ORB_SERVICE_METHOD(RegisterNode)
  ORB_SERVICE_METHOD(UnregisterNode)
  ORB_SERVICE_METHOD(GetAllNodes)
  ORB_SERVICE_METHOD(GetMetrics)
  ORB_SERVICE_METHOD(ReportWorkerFailure)
  ORB_SERVICE_METHOD_ON(RegisterActor, handler_->actors())
  ORB_SERVICE_METHOD_ON(GetActorInfo, handler_->actors())
  ORB_SERVICE_METHOD_ON(GetNamedActor, handler_->actors())
  ORB_SERVICE_METHOD_ON(KillActor, handler_->actors())
  ORB_SERVICE_METHOD_ON(RelocateActors, handler_->actors())
  ORB_SERVICE_METHOD_ON(ListActors, handler_->actors())
  ORB_SERVICE_METHOD_ON(CreatePlacementGroup, handler_->placement_groups())
  ORB_SERVICE_METHOD_ON(RemovePlacementGroup, handler_->placement_groups())
  ORB_SERVICE_METHOD_ON(GetPlacementGroup, handler_->placement_groups())
  ORB_SERVICE_METHOD_ON(ListPlacementGroups, handler_->placement_groups())
  ORB_SERVICE_METHOD(AddJob)
  ORB_SERVICE_METHOD(MarkJobFinished)
  ORB_SERVICE_METHOD(GetAllJobs)
  ORB_SERVICE_METHOD(GetJob)
  ORB_SERVICE_METHOD(KvPut)
  ORB_SERVICE_METHOD(KvGet)
  ORB_SERVICE_METHOD(KvDelete)
  ORB_SERVICE_METHOD(KvKeys)
  ORB_SERVICE_METHOD(Poll)
  ORB_SERVICE_METHOD(AddTaskEvents)
  ORB_SERVICE_METHOD(ListTasks)
  ORB_SERVICE_METHOD(PublishLogs)

 private:
  GcsHandler* handler_;
};

}  // namespace orb::gcs
