// The functions of <orb/collective.h>: a per-process registry of the groups this
// process belongs to, validation of every call, and joining groups made by the driver
// (CreateGroup) on a member's first call.
//
// Rendezvous keys (namespace "collective"): "<group>/members" (written by CreateGroup:
// backend, timeout, generation, actor IDs by rank), and under "<group>/<generation>/"
// Gloo's own keys ("init" for groups made with InitGroup).
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "collective/gcs_kv_store.h"
#include <dlfcn.h>

#include <filesystem>

#include "collective/gloo_group.h"
#include "common/id.h"
#include "common/metrics.h"
#include "core/current_core_worker.h"

namespace orb::collective {
namespace {

std::mutex g_mu;
std::map<std::string, std::shared_ptr<CollectiveGroup>> g_groups;  // guarded by g_mu

using NcclConnect = CollectiveGroup* (*)(CoreWorker*, const char*, int, int, const char*, int64_t, std::string*);

// The NCCL backend lives in liborb_nccl.so beside liborb, loaded on first use.
NcclConnect LoadNcclBackend() {
  static NcclConnect connect = nullptr;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info self;
    std::string dir = ::dladdr(reinterpret_cast<void*>(&LoadNcclBackend), &self) && self.dli_fname
                          ? std::filesystem::path(self.dli_fname).parent_path().string()
                          : std::string(".");
    void* plugin = ::dlopen((dir + "/liborb_nccl.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!plugin) {
      failure = std::string("this orb has no NCCL backend (") + ::dlerror() +
                "); it is built where CUDA and NCCL are found";
      return;
    }
    connect = reinterpret_cast<NcclConnect>(::dlsym(plugin, "OrbNcclConnect"));
    if (!connect) failure = "liborb_nccl.so has no OrbNcclConnect";
  });
  if (!connect) throw CollectiveError(failure);
  return connect;
}

// ORB_COLLECTIVE_SHM=0 keeps members on one machine on TCP (for comparisons and tests).
LocalTransport LocalTransportFromEnvironment() {
  const char* shm = std::getenv("ORB_COLLECTIVE_SHM");
  return shm && std::string(shm) == "0" ? LocalTransport::kTcp : LocalTransport::kSharedMemory;
}

std::shared_ptr<CollectiveGroup> Join(const std::string& group, int world_size, int rank, Backend backend,
                                      const std::string& generation, std::chrono::milliseconds timeout) {
  std::string prefix = group + "/" + generation + "/";
  if (backend == Backend::NCCL) {
    NcclConnect connect = LoadNcclBackend();
    std::string error;
    CollectiveGroup* made = connect(&orb::internal::CurrentCoreWorker(), group.c_str(), rank, world_size,
                                    prefix.c_str(), timeout.count(), &error);
    if (!made) throw CollectiveError("collective group '" + group + "': " + error);
    return std::shared_ptr<CollectiveGroup>(made);
  }
  GlooOptions options;
  options.timeout = timeout;
  options.local_transport = LocalTransportFromEnvironment();
  return GlooGroup::Connect(&orb::internal::CurrentCoreWorker(), group, rank, world_size, prefix, options);
}

// A group this process is in; joins a group made by CreateGroup if this actor is in it.
std::shared_ptr<CollectiveGroup> Find(const std::string& group) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_groups.find(group);
    if (it != g_groups.end()) return it->second;
  }
  CoreWorker& worker = orb::internal::CurrentCoreWorker();
  auto members = worker.KvGet(kKvNamespace, group + "/members");
  std::string self = worker.CurrentActorId();
  if (members && !self.empty()) {
    std::istringstream in(*members);
    int backend = 0;
    int64_t timeout_ms = 0;
    std::string generation, id;
    in >> backend >> timeout_ms >> generation;
    std::vector<std::string> ids;
    while (in >> id) ids.push_back(id);
    for (size_t rank = 0; rank < ids.size(); ++rank) {
      if (ids[rank] != self) continue;
      auto joined = Join(group, static_cast<int>(ids.size()), static_cast<int>(rank), static_cast<Backend>(backend),
                         generation, std::chrono::milliseconds(timeout_ms));
      std::lock_guard<std::mutex> lock(g_mu);
      return g_groups.emplace(group, std::move(joined)).first->second;
    }
  }
  throw CollectiveError("unknown collective group '" + group +
                        "': this process has not joined it (InitGroup, or CreateGroup over this actor)");
}

void CheckTensor(const Tensor& t, const char* what) {
  if (t.count > 0 && !t.data) throw CollectiveError(std::string(what) + ": the tensor has no data");
}

// Gloo takes CPU tensors; NCCL checks devices itself.
std::shared_ptr<CollectiveGroup> FindFor(const std::string& group, const Tensor& t, const char* what) {
  auto g = Find(group);
  if (g->backend() == Backend::GLOO && t.device >= 0) {
    throw CollectiveError(std::string(what) + " on collective group '" + group +
                          "': a CUDA tensor in a Gloo group (make the group with Backend::NCCL)");
  }
  return g;
}

size_t ElementBytes(DType dtype) {
  switch (dtype) {
    case DType::FLOAT64:
    case DType::INT64: return 8;
    case DType::FLOAT32:
    case DType::INT32: return 4;
    case DType::FLOAT16:
    case DType::BFLOAT16: return 2;
    case DType::UINT8: return 1;
  }
  return 1;
}

// orb_collective_calls_total and orb_collective_bytes_total by backend and operation
// (the bytes of this member's tensor), on the node's /metrics through the raylet.
void CountCall(const CollectiveGroup& g, const char* op, const Tensor& t) {
  prom::Labels labels{{"backend", g.backend() == Backend::NCCL ? "nccl" : "gloo"}, {"op", op}};
  IncrementCounter("collective_calls", labels, 1);
  IncrementCounter("collective_bytes", labels, static_cast<double>(t.count * ElementBytes(t.dtype)));
}

void CheckRank(const CollectiveGroup& g, int rank, const std::string& group, const char* what) {
  if (rank < 0 || rank >= g.size()) {
    throw CollectiveError(std::string(what) + " on collective group '" + group + "': rank " + std::to_string(rank) +
                          " is out of range (world size " + std::to_string(g.size()) + ")");
  }
}

}  // namespace

void InitGroup(const std::string& group, int world_size, int rank, Backend backend, std::chrono::milliseconds timeout) {
  if (group.empty()) throw CollectiveError("a collective group needs a name");
  if (world_size < 1) throw CollectiveError("world_size must be at least 1, got " + std::to_string(world_size));
  if (rank < 0 || rank >= world_size) {
    throw CollectiveError("rank " + std::to_string(rank) + " is out of range for world size " +
                          std::to_string(world_size));
  }
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_groups.count(group)) throw CollectiveError("this process is already in collective group '" + group + "'");
  }
  auto joined = Join(group, world_size, rank, backend, "init", timeout);
  std::lock_guard<std::mutex> lock(g_mu);
  g_groups[group] = std::move(joined);
}

namespace internal {
void CreateGroupOfActors(const std::vector<std::string>& actor_ids, const std::string& group, Backend backend,
                         std::chrono::milliseconds timeout) {
  if (group.empty()) throw CollectiveError("a collective group needs a name");
  if (actor_ids.empty()) throw CollectiveError("CreateGroup needs at least one actor");
  CoreWorker& worker = orb::internal::CurrentCoreWorker();
  worker.KvDeletePrefix(kKvNamespace, group + "/");  // leftovers of an earlier group of that name
  std::ostringstream members;
  members << static_cast<int>(backend) << " " << timeout.count() << " " << NodeID::FromRandom().Hex().substr(0, 12);
  for (const auto& id : actor_ids) members << " " << id;
  worker.KvPut(kKvNamespace, group + "/members", members.str());
}
}  // namespace internal

void AllReduce(Tensor tensor, const std::string& group, ReduceOp op) {
  CheckTensor(tensor, "AllReduce");
  auto g = FindFor(group, tensor, "AllReduce");
  g->AllReduce(tensor, op);
  CountCall(*g, "allreduce", tensor);
}

void Broadcast(Tensor tensor, int root, const std::string& group) {
  CheckTensor(tensor, "Broadcast");
  auto g = FindFor(group, tensor, "Broadcast");
  CheckRank(*g, root, group, "Broadcast");
  g->Broadcast(tensor, root);
  CountCall(*g, "broadcast", tensor);
}

void AllGather(Tensor in, Tensor out, const std::string& group) {
  CheckTensor(in, "AllGather");
  CheckTensor(out, "AllGather");
  auto g = FindFor(group, in, "AllGather");
  if (in.dtype != out.dtype || out.count != in.count * static_cast<size_t>(g->size())) {
    throw CollectiveError("AllGather on collective group '" + group + "': the output must hold world_size (" +
                          std::to_string(g->size()) + ") times the input, same dtype");
  }
  g->AllGather(in, out);
  CountCall(*g, "allgather", in);
}

void ReduceScatter(Tensor in, Tensor out, const std::string& group, ReduceOp op) {
  CheckTensor(in, "ReduceScatter");
  CheckTensor(out, "ReduceScatter");
  auto g = FindFor(group, in, "ReduceScatter");
  if (in.dtype != out.dtype || in.count != out.count * static_cast<size_t>(g->size())) {
    throw CollectiveError("ReduceScatter on collective group '" + group + "': the input must hold world_size (" +
                          std::to_string(g->size()) + ") times the output, same dtype");
  }
  g->ReduceScatter(in, out, op);
  CountCall(*g, "reducescatter", in);
}

void Reduce(Tensor tensor, int root, const std::string& group, ReduceOp op) {
  CheckTensor(tensor, "Reduce");
  auto g = FindFor(group, tensor, "Reduce");
  CheckRank(*g, root, group, "Reduce");
  g->Reduce(tensor, root, op);
  CountCall(*g, "reduce", tensor);
}

void Send(Tensor tensor, int dst, const std::string& group) {
  CheckTensor(tensor, "Send");
  auto g = FindFor(group, tensor, "Send");
  CheckRank(*g, dst, group, "Send");
  if (dst == g->rank()) throw CollectiveError("Send: a member cannot send to itself");
  g->Send(tensor, dst);
  CountCall(*g, "send", tensor);
}

void Recv(Tensor tensor, int src, const std::string& group) {
  CheckTensor(tensor, "Recv");
  auto g = FindFor(group, tensor, "Recv");
  CheckRank(*g, src, group, "Recv");
  if (src == g->rank()) throw CollectiveError("Recv: a member cannot receive from itself");
  g->Recv(tensor, src);
  CountCall(*g, "recv", tensor);
}

void Barrier(const std::string& group) { Find(group)->Barrier(); }
int GetRank(const std::string& group) { return Find(group)->rank(); }
int GetWorldSize(const std::string& group) { return Find(group)->size(); }

void DestroyGroup(const std::string& group) {
  std::shared_ptr<CollectiveGroup> leaving;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_groups.find(group);
    if (it != g_groups.end()) {
      leaving = std::move(it->second);
      g_groups.erase(it);
    }
  }
  orb::internal::CurrentCoreWorker().KvDeletePrefix(kKvNamespace, group + "/");
}

}  // namespace orb::collective
