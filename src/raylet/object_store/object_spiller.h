// Moves object bytes between the arena and files on local disk, on a thread of its own,
// so that the raylet's loop never waits on the disk.
//
// Objects spilled together share one file (one sequential write per batch, as Ray's
// spill workers do); a file is deleted when the last of its objects is freed. Files
// spread over the spill directories in turn (Ray's `directory_path` list); a directory
// whose last write failed (full, or an I/O error) is skipped for a while when another
// can take the batch, and the objects a directory could not take go on to the next one.
//
// What is on disk is trusted only once complete: a batch is written to
// `<name>.partial`, synced (fdatasync) and then renamed. A write that fails part-way
// keeps the objects written whole before the failure (the file is cut after the last
// of them, synced and renamed) and reports the rest as not written: they stay in
// memory. Nothing half-written is ever used. Each object's bytes carry a checksum
// (spill_file_io.h) that Restore verifies: a truncated or damaged file is DataLoss
// naming the file, never wrong bytes. A large object is read back on several threads.
//
// Files belong to this instance: their names carry an instance tag, and the instance
// holds a lock (flock) on `spill-<tag>.lock` in each directory while it lives. At
// start-up the files of every instance that holds no lock any more — a raylet killed
// with SIGKILL, finished or partial — are removed: the objects they held died with it.
//
// Spill, Restore, Release and directory_stats are called on the raylet's loop; `done`
// callbacks run there.
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
    uint64_t checksum = 0;  // of the object's bytes (spill_io::WriteChecked)
  };
  struct Item {
    ObjectID id;
    uint64_t arena_offset = 0;
    uint64_t size = 0;
  };
  // What a spill wrote: the locations of the first `written.size()` items, in order
  // (every item when `error` is OK); `error` says why the rest were not written.
  struct SpillResult {
    std::vector<Location> written;
    absl::Status error;
  };
  struct DirectoryStats {
    std::string path;
    uint64_t spilled_bytes = 0;  // in live files
    uint64_t files = 0;
    int64_t filesystem_free_bytes = -1;  // -1: the filesystem could not be read
    int64_t filesystem_total_bytes = -1;
    uint64_t failures_total = 0;
    std::string last_error;
  };

  // `dirs` (at least one) are created here if they can be, cleared of the files of
  // instances that died, and otherwise created on first use. `arena` is the mapped
  // arena objects are read from and restored into.
  ObjectSpiller(std::vector<std::string> dirs, char* arena, EventLoop* loop);
  ObjectSpiller(std::string dir, char* arena, EventLoop* loop)
      : ObjectSpiller(std::vector<std::string>{std::move(dir)}, arena, loop) {}
  ~ObjectSpiller();  // finishes the disk work queued, then removes the files left
  ObjectSpiller(const ObjectSpiller&) = delete;
  ObjectSpiller& operator=(const ObjectSpiller&) = delete;

  // Writes the items' bytes (which must stay put until `done`) to disk. The error of a
  // spill that wrote nothing, or not everything, is ResourceExhausted naming the
  // directories and why each refused.
  void Spill(std::vector<Item> items, std::function<void(SpillResult)> done);
  // Reads `size` bytes spilled at `from` into the arena at `arena_offset` and checks
  // them against the checksum: DataLoss naming the file when it is missing, short or
  // damaged.
  void Restore(const Location& from, uint64_t arena_offset, uint64_t size, std::function<void(absl::Status)> done);
  // One object spilled to `path` is freed; the file goes with its last object.
  void Release(const std::string& path);

  // The directories, comma-separated, for messages.
  std::string dirs_text() const;
  std::vector<DirectoryStats> directory_stats() const;
  // Spill files that still hold live objects.
  size_t num_files() const { return files_.size(); }

 private:
  struct Directory;  // defined in the .cc
  struct FileWritten {
    size_t dir = 0;
    std::string path;
    int objects = 0;
    uint64_t bytes = 0;
  };
  struct LiveFile {
    size_t dir = 0;
    int objects = 0;  // not yet freed
    uint64_t bytes = 0;
  };
  // Disk thread: writes `items` into one new file in directory `d`; returns what it
  // wrote (a prefix) and, if not all, why not.
  SpillResult WriteBatch(size_t d, const std::vector<Item>& items, FileWritten* file);

  std::string tag_;  // this instance's part of every file name
  char* arena_;
  EventLoop* loop_;
  std::vector<std::unique_ptr<Directory>> dirs_;
  // Disk thread only.
  uint64_t next_file_ = 0;
  size_t next_dir_ = 0;
  // Loop only.
  std::map<std::string, LiveFile> files_;
  std::vector<uint64_t> failures_;
  std::vector<std::string> last_error_;
  std::unique_ptr<ThreadPool> disk_;  // one thread: the disk work, in order
  std::unique_ptr<ThreadPool> readers_;  // help the disk thread read a large object back
  int reader_helpers_ = 0;
};

}  // namespace orb
