// One shared-memory file in /dev/shm, mapped into the raylet and into every local worker.
//
// The raylet creates it at start (Create) as a sparse file of the store's capacity and
// reserves its pages as the store's allocations reach them (Reserve, in 64 MiB steps):
// a store of 30% of the machine's memory costs nothing until it is used, and a full
// /dev/shm is an error from Reserve (ObjectStoreFull), never a SIGBUS on a later write.
// Drivers and workers map the same file once (Attach) and read objects in place: a Get
// on the node is zero-copy. A driver's mapping has its first kPopulatedPrefix bytes
// populated up front (where the first-fit allocator puts objects, so large Puts copy at
// memory speed); a worker's fills in as it touches pages, since populating page table
// entries would cost each new worker (each new actor) tens of ms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace orb {

class ShmArena {
 public:
  // How much of a driver's mapping is populated at Attach.
  static constexpr size_t kPopulatedPrefix = size_t{512} << 20;

  // Creates `path` (a /dev/shm file) of `size` bytes, sparse, and maps it.
  static absl::StatusOr<std::unique_ptr<ShmArena>> Create(const std::string& path, size_t size);
  enum class Mapping { kPopulated, kOnDemand };
  // Maps an existing arena read-write.
  static absl::StatusOr<std::unique_ptr<ShmArena>> Attach(const std::string& path, size_t size,
                                                          Mapping mapping = Mapping::kPopulated);
  ~ShmArena();  // unmaps; the creator also unlinks the file

  // The creator only: makes sure the pages of [0, end) exist. ResourceExhausted, naming
  // the file system, when /dev/shm has no room for them.
  absl::Status Reserve(uint64_t end);

  // Arena files are named "<prefix><pid>-<tag>" after the raylet that made them. A raylet
  // killed with SIGKILL cannot unlink its file, so this removes every such file in `dir`
  // whose process is gone. Returns how many it removed.
  static int RemoveStaleArenas(const std::string& dir = "/dev/shm", const std::string& prefix = "orb-store-");

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  ShmArena(std::string path, uint8_t* data, size_t size, bool owner, int fd)
      : path_(std::move(path)), data_(data), size_(size), owner_(owner), fd_(fd) {}
  std::string path_;
  uint8_t* data_;
  size_t size_;
  bool owner_;
  int fd_;                 // the creator's, for Reserve; -1 otherwise
  uint64_t reserved_ = 0;  // pages of [0, reserved_) exist
};

}  // namespace orb
