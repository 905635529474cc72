// One shared-memory file in /dev/shm, mapped into the raylet and into every local worker.
//
// The raylet creates it at start (Create) with every page touched, so that writers
// later copy at memory speed instead of taking a page fault per 4 KiB. Drivers and
// workers map the same file once (Attach) and read objects in place: a Get on the node
// is zero-copy. A driver's mapping is populated up front (its large Puts copy at memory
// speed); a worker's fills in as it touches pages, since populating every page table
// entry of a large arena would cost each new worker (each new actor) tens of ms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace orb {

class ShmArena {
 public:
  // Creates `path` (a /dev/shm file) of `size` bytes and maps it, pre-faulted.
  static absl::StatusOr<std::unique_ptr<ShmArena>> Create(const std::string& path, size_t size);
  enum class Mapping { kPopulated, kOnDemand };
  // Maps an existing arena read-write.
  static absl::StatusOr<std::unique_ptr<ShmArena>> Attach(const std::string& path, size_t size,
                                                          Mapping mapping = Mapping::kPopulated);
  ~ShmArena();  // unmaps; the creator also unlinks the file

  // Arena files are named "<prefix><pid>-<tag>" after the raylet that made them. A raylet
  // killed with SIGKILL cannot unlink its file, so this removes every such file in `dir`
  // whose process is gone. Returns how many it removed.
  static int RemoveStaleArenas(const std::string& dir = "/dev/shm", const std::string& prefix = "orb-store-");

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  ShmArena(std::string path, uint8_t* data, size_t size, bool owner)
      : path_(std::move(path)), data_(data), size_(size), owner_(owner) {}
  std::string path_;
  uint8_t* data_;
  size_t size_;
  bool owner_;
};

}  // namespace orb
