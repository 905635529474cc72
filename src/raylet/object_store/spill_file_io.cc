#include "raylet/object_store/spill_file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "common/thread_pool.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace orb::spill_io {
namespace {

// Bytes are moved and hashed in slices this big, each hashed while it is in cache.
constexpr uint64_t kSlice = 256 << 10;

// Moves all of `size` bytes at `offset` with `io` (pread or pwrite); the errno of a
// failure, `at_end` when `io` moves nothing (the file ends, or the disk is full).
template <class Bytes, class Io>
int MoveAll(Io io, int fd, Bytes* data, uint64_t size, uint64_t offset, int at_end) {
  while (size > 0) {
    ssize_t n = io(fd, data, std::min<uint64_t>(size, 1ull << 30), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return at_end;
    data += n;
    size -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return 0;
}

int WriteAll(int fd, const char* data, uint64_t size, uint64_t offset) {
  return MoveAll(::pwrite, fd, data, size, offset, ENOSPC);
}

int ReadAll(int fd, char* data, uint64_t size, uint64_t offset) {
  return MoveAll(::pread, fd, data, size, offset, EIO);
}

uint64_t PieceCount(uint64_t size) { return (size + kChunk - 1) / kChunk; }

// Reads piece `index` of the object at `offset` of the file into `data` (kWrite: writes
// it from `data`), hashing it slice by slice while in cache; its hash in `*hash`.
template <bool kWrite, class Bytes>
int MovePiece(int fd, Bytes* data, uint64_t size, uint64_t offset, uint64_t index, uint64_t* hash) {
  uint64_t begin = index * kChunk;
  uint64_t end = std::min(size, begin + kChunk);
  XXH3_state_t state;
  XXH3_64bits_reset_withSeed(&state, index);
  for (uint64_t done = begin; done < end;) {
    uint64_t n = std::min(kSlice, end - done);
    if constexpr (kWrite) XXH3_64bits_update(&state, data + done, static_cast<size_t>(n));
    int err = kWrite ? WriteAll(fd, data + done, n, offset + done)
                     : ReadAll(fd, const_cast<char*>(data) + done, n, offset + done);
    if (err != 0) return err;
    if constexpr (!kWrite) XXH3_64bits_update(&state, data + done, static_cast<size_t>(n));
    done += n;
  }
  *hash = XXH3_64bits_digest(&state);
  return 0;
}

// The pieces of one read, taken in turn by the threads reading it.
struct SharedRead {
  int fd;
  char* data;
  uint64_t size;
  uint64_t offset;
  uint64_t pieces;
  std::atomic<uint64_t> next{0};
  std::mutex mu;
  std::condition_variable finished;
  int helpers_running = 0;
  uint64_t checksum = 0;
  int err = 0;

  void Work() {
    uint64_t mine = 0;
    int my_err = 0;
    for (uint64_t i = next++; i < pieces && my_err == 0; i = next++) {
      uint64_t hash = 0;
      my_err = MovePiece<false>(fd, data, size, offset, i, &hash);
      mine ^= hash;
    }
    if (my_err != 0) next = pieces;  // the others stop too
    std::lock_guard<std::mutex> lock(mu);
    checksum ^= mine;
    if (err == 0) err = my_err;
  }
};

}  // namespace

int WriteChecked(int fd, const char* data, uint64_t size, uint64_t offset, uint64_t* checksum) {
  uint64_t sum = 0;
  for (uint64_t index = 0, pieces = PieceCount(size); index < pieces; ++index) {
    uint64_t hash = 0;
    if (int err = MovePiece<true>(fd, data, size, offset, index, &hash); err != 0) return err;
    sum ^= hash;
    // Best effort: writeback starts now rather than at the closing fdatasync.
    uint64_t begin = index * kChunk;
    ::sync_file_range(fd, static_cast<off_t>(offset + begin), static_cast<off_t>(std::min(kChunk, size - begin)),
                      SYNC_FILE_RANGE_WRITE);
  }
  *checksum = sum;
  return 0;
}

int ReadChecked(int fd, char* data, uint64_t size, uint64_t offset, uint64_t* checksum, ThreadPool* helpers,
                int helper_threads) {
  auto read = std::make_shared<SharedRead>();
  read->fd = fd;
  read->data = data;
  read->size = size;
  read->offset = offset;
  read->pieces = PieceCount(size);
  // Helpers for the pieces beyond the first: this thread reads too.
  uint64_t others = read->pieces > 1 ? read->pieces - 1 : 0;
  int extra = helpers == nullptr ? 0 : static_cast<int>(std::min<uint64_t>(std::max(helper_threads, 0), others));
  read->helpers_running = extra;
  for (int i = 0; i < extra; ++i) {
    helpers->Post([read] {
      read->Work();
      std::lock_guard<std::mutex> lock(read->mu);
      if (--read->helpers_running == 0) read->finished.notify_all();
    });
  }
  read->Work();
  std::unique_lock<std::mutex> lock(read->mu);
  read->finished.wait(lock, [&] { return read->helpers_running == 0; });
  *checksum = read->checksum;
  return read->err;
}

}  // namespace orb::spill_io
