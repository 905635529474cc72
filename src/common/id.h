// Fixed-size binary identifiers for nodes, workers, jobs, tasks, objects and leases.
//
// IDs are value types: cheap to copy, hashable, comparable, printable as hex. Random IDs
// come from a per-thread generator seeded from the OS; they never repeat in practice.
// Thread-safe: every function here may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

namespace orb {

namespace id_internal {
void FillRandom(uint8_t* out, size_t n);
std::string ToHex(const uint8_t* data, size_t n);
// Returns false when `hex` is not 2*n hex digits.
bool FromHex(std::string_view hex, uint8_t* out, size_t n);
}  // namespace id_internal

// A random UUID (version 4) in its usual text form: the namespace of a job that names none.
std::string RandomUuid();

template <class Tag, size_t N>
class BaseID {
 public:
  static constexpr size_t kSize = N;

  BaseID() { bytes_.fill(0); }
  static BaseID FromRandom() {
    BaseID id;
    id_internal::FillRandom(id.bytes_.data(), N);
    return id;
  }
  // A binary of the wrong size gives the nil ID.
  static BaseID FromBinary(std::string_view binary) {
    BaseID id;
    if (binary.size() == N) std::memcpy(id.bytes_.data(), binary.data(), N);
    return id;
  }
  // A malformed hex string gives the nil ID.
  static BaseID FromHex(std::string_view hex) {
    BaseID id;
    if (!id_internal::FromHex(hex, id.bytes_.data(), N)) id.bytes_.fill(0);
    return id;
  }
  static BaseID Nil() { return BaseID(); }

  bool IsNil() const {
    for (uint8_t b : bytes_) {
      if (b != 0) return false;
    }
    return true;
  }
  std::string Binary() const { return std::string(reinterpret_cast<const char*>(bytes_.data()), N); }
  std::string Hex() const { return id_internal::ToHex(bytes_.data(), N); }
  const uint8_t* data() const { return bytes_.data(); }
  uint8_t* mutable_data() { return bytes_.data(); }

  bool operator==(const BaseID& o) const { return bytes_ == o.bytes_; }
  bool operator!=(const BaseID& o) const { return bytes_ != o.bytes_; }
  bool operator<(const BaseID& o) const { return bytes_ < o.bytes_; }

  size_t Hash() const {
    size_t h = 0;
    std::memcpy(&h, bytes_.data(), sizeof(h) < N ? sizeof(h) : N);
    return h;
  }

 private:
  std::array<uint8_t, N> bytes_;
};

struct NodeTag {};
struct WorkerTag {};
struct JobTag {};
struct TaskTag {};
struct ObjectTag {};
struct LeaseTag {};
struct ActorTag {};
struct PlacementGroupTag {};

using NodeID = BaseID<NodeTag, 16>;
using WorkerID = BaseID<WorkerTag, 16>;
using JobID = BaseID<JobTag, 4>;
using TaskID = BaseID<TaskTag, 16>;
using LeaseID = BaseID<LeaseTag, 16>;
using ActorID = BaseID<ActorTag, 16>;
using PlacementGroupID = BaseID<PlacementGroupTag, 16>;

// An object ID is the ID of the task that made it plus a 4-byte index: index 1.. for
// task returns, and index with the top bit set for objects made by Put.
class ObjectID : public BaseID<ObjectTag, 20> {
 public:
  using BaseID::BaseID;
  ObjectID(const BaseID& b) : BaseID(b) {}  // NOLINT: conversion from the base is lossless
  static ObjectID ForTaskReturn(const TaskID& task, uint32_t index);
  static ObjectID ForPut(const TaskID& creator, uint32_t put_index);
  TaskID Task() const;
};

JobID JobIDFromInt(uint32_t n);
uint32_t JobIDToInt(const JobID& id);

}  // namespace orb

namespace std {
template <class Tag, size_t N>
struct hash<orb::BaseID<Tag, N>> {
  size_t operator()(const orb::BaseID<Tag, N>& id) const { return id.Hash(); }
};
template <>
struct hash<orb::ObjectID> {
  // The first bytes are the task ID, identical for a task's returns: mix in the index.
  size_t operator()(const orb::ObjectID& id) const {
    uint32_t index;
    std::memcpy(&index, id.data() + 16, 4);
    return id.Hash() ^ (static_cast<size_t>(index) * 0x9E3779B97F4A7C15ull);
  }
};
}  // namespace std
