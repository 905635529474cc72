// Reading and writing one object's bytes in a spill file, with the checksum that proves
// them whole.
//
// An object's checksum is the XOR of the XXH3-64 of each kChunk-sized piece of it (the
// last one shorter), each seeded with the piece's index, so a piece moved within the
// object does not check. Pieces stand alone: a large object is read back on several
// threads at once, each checking its own pieces — one thread alone reads from the page
// cache and hashes at about two-thirds of the speed it reads. Within a piece, bytes are
// hashed in small slices while they are in cache.
//
// Writes ask the kernel to start writing each piece back as soon as it is written
// (sync_file_range), so that the fdatasync a spill ends with has little left to wait
// for.
//
// Every function returns 0 or the errno of the failure; a file that ends too soon is EIO.
#pragma once

#include <cstdint>

namespace orb {

class ThreadPool;

namespace spill_io {

constexpr uint64_t kChunk = 8ull << 20;

// Writes all of [data, data+size) at `offset` of `fd`, computing its checksum.
int WriteChecked(int fd, const char* data, uint64_t size, uint64_t offset, uint64_t* checksum);

// Reads `size` bytes at `offset` of `fd` into `data`, computing their checksum; the
// pieces are shared with up to `helper_threads` tasks posted to `helpers` (may be null),
// this thread reading too. Returns once every piece is read.
int ReadChecked(int fd, char* data, uint64_t size, uint64_t offset, uint64_t* checksum, ThreadPool* helpers = nullptr,
                int helper_threads = 0);

}  // namespace spill_io
}  // namespace orb
