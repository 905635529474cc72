// `orb list actors`, `orb list placement-groups`: the GCS's tables, one line per row
// (`orb list objects` is in objects.cc).
#include <iomanip>
#include <iostream>

#include "cli/commands.h"
#include "common/id.h"
#include "common/rpc.h"
#include "common/session.h"
#include "gcs_service.grpc.pb.h"

namespace orb::cli {
namespace {

const char* StateName(rpc::ActorInfo::State state) {
  switch (state) {
    case rpc::ActorInfo::PENDING_CREATION: return "PENDING";
    case rpc::ActorInfo::ALIVE: return "ALIVE";
    case rpc::ActorInfo::RESTARTING: return "RESTARTING";
    case rpc::ActorInfo::DEAD: return "DEAD";
    default: return "?";
  }
}

int ListActors(RpcClient<rpc::GcsService>& gcs, const std::string& address) {
  CallOptions call;
  call.timeout = std::chrono::milliseconds(5000);
  auto reply = gcs.CallSync<rpc::ListActorsReply>(ORB_RPC(ListActors), rpc::ListActorsRequest(), call);
  if (!reply.ok()) {
    std::cerr << "orb list: cannot reach the GCS at " << address << ": " << reply.status().message() << "\n";
    return 1;
  }
  std::cout << std::left << std::setw(34) << "ACTOR_ID" << std::setw(16) << "CLASS" << std::setw(11) << "STATE"
            << std::setw(18) << "NAME" << std::setw(22) << "ADDRESS" << std::setw(9) << "RESTARTS"
            << "DEATH\n";
  for (const auto& actor : reply->actors()) {
    std::string where = actor.state() == rpc::ActorInfo::ALIVE
                            ? actor.address().ip() + ":" + std::to_string(actor.address().port())
                            : "-";
    std::string restarts = std::to_string(actor.num_restarts()) + "/" +
                           (actor.max_restarts() < 0 ? std::string("inf") : std::to_string(actor.max_restarts()));
    std::string name = actor.name().empty() ? "-" : actor.name();
    std::cout << std::left << std::setw(34) << ActorID::FromBinary(actor.actor_id()).Hex() << std::setw(16)
              << actor.class_name() << std::setw(11) << StateName(actor.state()) << std::setw(18) << name
              << std::setw(22) << where << std::setw(9) << restarts
              << (actor.state() == rpc::ActorInfo::DEAD ? actor.death_reason() : "") << "\n";
  }
  return 0;
}

int ListPlacementGroups(RpcClient<rpc::GcsService>& gcs, const std::string& address) {
  CallOptions call;
  call.timeout = std::chrono::milliseconds(5000);
  auto reply = gcs.CallSync<rpc::ListPlacementGroupsReply>(ORB_RPC(ListPlacementGroups),
                                                           rpc::ListPlacementGroupsRequest(), call);
  if (!reply.ok()) {
    std::cerr << "orb list: cannot reach the GCS at " << address << ": " << reply.status().message() << "\n";
    return 1;
  }
  std::cout << std::left << std::setw(34) << "PLACEMENT_GROUP_ID" << std::setw(16) << "NAME" << std::setw(14)
            << "STRATEGY" << std::setw(13) << "STATE" << "BUNDLES (resources @ node)\n";
  for (const auto& pg : reply->placement_groups()) {
    std::string bundles;
    for (const auto& b : pg.bundles()) {
      bundles += bundles.empty() ? "{" : " {";
      bool first = true;
      for (const auto& [name, amount] : b.resources()) {
        bundles += (first ? "" : ", ") + name + ": " + std::to_string(amount).substr(0, 4);
        first = false;
      }
      bundles += "}@" + (b.node_id().empty() ? std::string("-") : NodeID::FromBinary(b.node_id()).Hex().substr(0, 8));
    }
    std::cout << std::left << std::setw(34) << PlacementGroupID::FromBinary(pg.placement_group_id()).Hex()
              << std::setw(16) << (pg.name().empty() ? "-" : pg.name()) << std::setw(14)
              << rpc::PlacementGroupInfo::Strategy_Name(pg.strategy()) << std::setw(13)
              << rpc::PlacementGroupInfo::State_Name(pg.state()) << bundles << "\n";
  }
  return 0;
}

}  // namespace

std::string ResolveClusterAddress(const std::string& given, const std::string& command) {
  std::string address = given.empty() ? FindLocalClusterAddress() : given;
  if (address.empty()) std::cerr << "orb " << command << ": no running local cluster found; pass --address HOST:PORT\n";
  return address;
}

int List(const std::string& what, const std::string& given_address, const std::string& format) {
  if (what == "objects") return ListObjects(given_address, format);
  std::string address = ResolveClusterAddress(given_address, "list");
  if (address.empty()) return 1;
  RpcClient<rpc::GcsService> gcs(address, FindTokenForAddress(address));
  if (what == "actors") return ListActors(gcs, address);
  if (what == "placement-groups") return ListPlacementGroups(gcs, address);
  std::cerr << "orb list: unknown table '" << what << "' (known: actors, placement-groups, objects)\n";
  return 2;
}

}  // namespace orb::cli
