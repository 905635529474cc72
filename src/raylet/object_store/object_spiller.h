// Moves object bytes between the arena and files on local disk, on a thread of its own,
// so that the raylet's loop never waits on the disk.
//
// Objects spilled together share one file (one sequential write per batch, as Ray's
// spill workers do); a file is deleted when the last of its objects is freed. A write
// that fails (the disk is full) leaves nothing behind: its file is removed and the
// objects stay in memory.
//
// Spill, Restore and Release are called on the raylet's loop; `done` callbacks run there.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/event_loop.h"
#include "common/id.h"
#include "common/thread_pool.h"

namespace orb {

class ObjectSpiller {
 public:
  // Where a spilled object's bytes are.
  struct Location {
    std::string path;
    uint64_t offset = 0;
  };
  struct Item {
    ObjectID id;
    uint64_t arena_offset = 0;
    uint64_t size = 0;
  };

  // `dir` is created on first use. `arena` is the mapped arena objects are read from
  // and restored into.
  ObjectSpiller(std::string dir, char* arena, EventLoop* loop);
  ~ObjectSpiller();  // finishes the disk work queued, then removes the files left
  ObjectSpiller(const ObjectSpiller&) = delete;
  ObjectSpiller& operator=(const ObjectSpiller&) = delete;

  // Writes the items' bytes (which must stay put until `done`) to one new file.
  // `done` gets a location per item, in order, or the error: ResourceExhausted when
  // the disk is full, naming the directory.
  void Spill(std::vector<Item> items, std::function<void(absl::StatusOr<std::vector<Location>>)> done);
  // Reads `size` bytes spilled at `from` into the arena at `arena_offset`.
  void Restore(const Location& from, uint64_t arena_offset, uint64_t size, std::function<void(absl::Status)> done);
  // One object spilled to `path` is freed; the file goes with its last object.
  void Release(const std::string& path);

  const std::string& dir() const { return dir_; }
  // Spill files that still hold live objects.
  size_t num_files() const { return live_objects_.size(); }

 private:
  std::string dir_;
  char* arena_;
  EventLoop* loop_;
  uint64_t next_file_ = 0;
  std::map<std::string, int> live_objects_;  // path -> objects not yet freed (loop only)
  std::unique_ptr<ThreadPool> disk_;  // one thread: the disk work, in order
};

}  // namespace orb
