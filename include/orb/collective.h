// Collective communication among the members of a group (usually actors), with ranks
// 0..world_size-1: every member calls the same collective in the same order.
//
//   namespace col = orb::collective;
//   std::vector<float> grad(1024, 1.0f);
//   col::InitGroup("g", /*world_size=*/2, /*rank=*/0, col::Backend::GLOO);  // in each member
//   col::AllReduce(col::View(grad), "g", col::ReduceOp::SUM);
//
// Or from the driver, over actor handles (ranks in handle order; each actor joins on its
// first collective call): col::CreateGroup(actors, "g", col::Backend::GLOO).
// Rendezvous goes through the GCS key-value store. Failures (a member died, mismatched
// sizes or dtypes, a timeout, an unknown group or rank) throw orb::CollectiveError.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "orb/actor.h"
#include "orb/errors.h"

namespace orb::collective {

enum class Backend { GLOO, NCCL };
enum class ReduceOp { SUM, PRODUCT, MIN, MAX };
enum class DType { FLOAT32, FLOAT64, FLOAT16, BFLOAT16, INT32, INT64, UINT8 };

// A view of memory: `count` elements of `dtype` at `data`, on the CPU (device -1) or a
// CUDA device. Not owning.
struct Tensor {
  void* data = nullptr;
  size_t count = 0;
  DType dtype = DType::FLOAT32;
  int device = -1;
};

inline Tensor View(std::vector<float>& v) { return {v.data(), v.size(), DType::FLOAT32, -1}; }
inline Tensor View(std::vector<double>& v) { return {v.data(), v.size(), DType::FLOAT64, -1}; }
inline Tensor View(std::vector<int32_t>& v) { return {v.data(), v.size(), DType::INT32, -1}; }
inline Tensor View(std::vector<int64_t>& v) { return {v.data(), v.size(), DType::INT64, -1}; }
inline Tensor View(std::vector<uint8_t>& v) { return {v.data(), v.size(), DType::UINT8, -1}; }

// How long a collective may wait for the other members before failing.
inline constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(30);

void InitGroup(const std::string& group, int world_size, int rank, Backend backend = Backend::GLOO,
               std::chrono::milliseconds timeout = kDefaultTimeout);

namespace internal {
void CreateGroupOfActors(const std::vector<std::string>& actor_ids, const std::string& group, Backend backend,
                         std::chrono::milliseconds timeout);
}  // namespace internal

// From the driver: the actors form `group`, rank i being actors[i].
template <class T>
void CreateGroup(const std::vector<ActorHandle<T>>& actors, const std::string& group, Backend backend = Backend::GLOO,
                 std::chrono::milliseconds timeout = kDefaultTimeout) {
  std::vector<std::string> ids;
  for (const auto& a : actors) ids.push_back(a.ID());
  internal::CreateGroupOfActors(ids, group, backend, timeout);
}

void AllReduce(Tensor tensor, const std::string& group, ReduceOp op = ReduceOp::SUM);
void Broadcast(Tensor tensor, int root, const std::string& group);
// out.count == in.count * world_size; rank r's input lands at out[r * in.count].
void AllGather(Tensor in, Tensor out, const std::string& group);
// in.count == out.count * world_size; rank r receives the reduction of slice r.
void ReduceScatter(Tensor in, Tensor out, const std::string& group, ReduceOp op = ReduceOp::SUM);
void Reduce(Tensor tensor, int root, const std::string& group, ReduceOp op = ReduceOp::SUM);
void Send(Tensor tensor, int dst, const std::string& group);
void Recv(Tensor tensor, int src, const std::string& group);
void Barrier(const std::string& group);
int GetRank(const std::string& group);
int GetWorldSize(const std::string& group);
// Leaves the group and removes its rendezvous keys; the name can then be used again.
void DestroyGroup(const std::string& group);

}  // namespace orb::collective
