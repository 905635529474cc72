// One object's bytes in a spill file: what is written reads back with the same checksum,
// on one thread or several; a changed byte, two pieces swapped or a short file do not.
#include "raylet/object_store/spill_file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/thread_pool.h"

using namespace orb;

namespace {

struct TempFile {
  std::string path;
  int fd = -1;
  TempFile() {
    char name[] = "/tmp/spill_file_io_test.XXXXXX";
    fd = ::mkstemp(name);
    path = name;
  }
  ~TempFile() {
    ::close(fd);
    ::unlink(path.c_str());
  }
};

std::vector<char> Bytes(uint64_t size) {
  std::vector<char> out(size);
  for (uint64_t i = 0; i < size; ++i) out[i] = static_cast<char>((i * 131) ^ (i >> 20));  // no two pieces alike
  return out;
}

}  // namespace

TEST_CASE("an object reads back with its checksum, alone or with helpers") {
  const uint64_t size = 3 * spill_io::kChunk + 12345;  // four pieces, the last short
  auto bytes = Bytes(size);
  TempFile file;
  const uint64_t at = 4096;  // not the file's first object
  uint64_t written = 0;
  REQUIRE(spill_io::WriteChecked(file.fd, bytes.data(), size, at, &written) == 0);

  ThreadPool helpers(3);
  for (int helper_threads : {0, 1, 3}) {
    std::vector<char> back(size);
    uint64_t read = 0;
    REQUIRE(spill_io::ReadChecked(file.fd, back.data(), size, at, &read, &helpers, helper_threads) == 0);
    CHECK(read == written);
    CHECK(back == bytes);
  }
  uint64_t empty_written = 1, empty_read = 2;
  CHECK(spill_io::WriteChecked(file.fd, nullptr, 0, 0, &empty_written) == 0);
  CHECK(spill_io::ReadChecked(file.fd, nullptr, 0, 0, &empty_read, &helpers, 3) == 0);
  CHECK(empty_read == empty_written);
}

TEST_CASE("a changed byte, swapped pieces or a short file do not pass") {
  const uint64_t size = 2 * spill_io::kChunk;
  auto bytes = Bytes(size);
  TempFile file;
  uint64_t written = 0;
  REQUIRE(spill_io::WriteChecked(file.fd, bytes.data(), size, 0, &written) == 0);
  ThreadPool helpers(1);
  std::vector<char> back(size);
  uint64_t read = 0;

  char flipped = static_cast<char>(bytes[size - 7] ^ 1);
  REQUIRE(::pwrite(file.fd, &flipped, 1, static_cast<off_t>(size - 7)) == 1);
  REQUIRE(spill_io::ReadChecked(file.fd, back.data(), size, 0, &read, &helpers, 1) == 0);
  CHECK(read != written);

  // The two pieces of the object, each whole, in each other's place.
  std::vector<char> swapped(bytes.begin() + spill_io::kChunk, bytes.end());
  swapped.insert(swapped.end(), bytes.begin(), bytes.begin() + spill_io::kChunk);
  REQUIRE(::pwrite(file.fd, swapped.data(), size, 0) == static_cast<ssize_t>(size));
  REQUIRE(spill_io::ReadChecked(file.fd, back.data(), size, 0, &read, &helpers, 1) == 0);
  CHECK(read != written);

  REQUIRE(::ftruncate(file.fd, static_cast<off_t>(size - 1)) == 0);
  CHECK(spill_io::ReadChecked(file.fd, back.data(), size, 0, &read, &helpers, 1) == EIO);
  CHECK(spill_io::ReadChecked(file.fd, back.data(), size, 0, &read) == EIO);
}
