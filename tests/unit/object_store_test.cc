#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "common/event_loop.h"
#include "common/shm_arena.h"
#include "raylet/object_store/arena_allocator.h"
#include "raylet/object_store/local_object_store.h"

using namespace orb;

TEST_CASE("the arena allocator reuses and coalesces freed ranges", "[object_store]") {
  ArenaAllocator alloc(1024);
  auto a = alloc.Allocate(256);
  auto b = alloc.Allocate(256);
  auto c = alloc.Allocate(512);
  REQUIRE((a && b && c));
  CHECK_FALSE(alloc.Allocate(1));
  alloc.Free(*a, 256);
  alloc.Free(*b, 256);
  auto d = alloc.Allocate(512);  // only fits if a and b merged
  REQUIRE(d);
  CHECK(*d == *a);
  CHECK(alloc.used() == 1024);
}

namespace {
ObjectID Id(int n) { return ObjectID::ForPut(TaskID::Nil(), static_cast<uint32_t>(n)); }
}  // namespace

TEST_CASE("objects are created, sealed, read while pinned and freed by their owner", "[object_store]") {
  EventLoop loop;
  LocalObjectStore store(1 << 20, &loop);
  WorkerID owner = WorkerID::FromRandom();
  WorkerID reader = WorkerID::FromRandom();
  auto created = store.Create(Id(1), 1000, owner);
  REQUIRE(created.ok());
  CHECK_FALSE(store.Contains(Id(1)));  // not readable before Seal
  REQUIRE(store.Seal(Id(1)).ok());
  std::vector<ObjectLocationInArena> got;
  store.Get({Id(1), Id(2)}, reader, std::chrono::milliseconds(0), [&](auto locs) { got = locs; });
  REQUIRE(got.size() == 2);
  CHECK(got[0].found);
  CHECK(got[0].offset == created->offset);
  CHECK_FALSE(got[1].found);
  store.Delete({Id(1)});
  CHECK(store.num_objects() == 1);  // still pinned by the reader
  store.Release({Id(1)}, reader);
  CHECK(store.num_objects() == 0);
  CHECK(store.used() == 0);
}

TEST_CASE("a full store evicts least-recently-used unreferenced objects, then says ObjectStoreFull", "[object_store]") {
  EventLoop loop;
  LocalObjectStore store(4096, &loop);
  WorkerID gone = WorkerID::FromRandom();
  WorkerID alive = WorkerID::FromRandom();
  REQUIRE(store.Create(Id(1), 2048, gone).ok());
  REQUIRE(store.Seal(Id(1)).ok());
  REQUIRE(store.Create(Id(2), 2048, alive).ok());
  REQUIRE(store.Seal(Id(2)).ok());
  // Nothing is evictable while both owners live.
  auto full = store.Create(Id(3), 2048, alive);
  CHECK(full.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(full.status().message()), Catch::Contains("object store full"));
  store.ForgetWorker(gone);  // its object becomes evictable
  REQUIRE(store.Create(Id(3), 2048, alive).ok());
  CHECK_FALSE(store.Contains(Id(1)));
  CHECK(store.Contains(Id(2)));
  CHECK(store.Create(Id(4), 1 << 20, alive).status().code() == absl::StatusCode::kResourceExhausted);
}

TEST_CASE("free space split up by objects in use is compacted when it can be, and named when it cannot",
          "[object_store][regression]") {
  EventLoop loop;
  std::vector<char> arena(4096);
  LocalObjectStore store(4096, &loop, nullptr, [&](uint64_t to, uint64_t from, uint64_t size) {
    std::memmove(arena.data() + to, arena.data() + from, size);
  });
  WorkerID owner = WorkerID::FromRandom();
  WorkerID reader = WorkerID::FromRandom();
  // Four objects of 1 KiB; the first and third freed: 2 KiB free, in two pieces.
  for (int i = 1; i <= 4; ++i) {
    auto created = store.Create(Id(i), 1024, owner);
    REQUIRE(created.ok());
    std::memset(arena.data() + created->offset, 'a' + i, 1024);
    REQUIRE(store.Seal(Id(i)).ok());
  }
  std::vector<ObjectLocationInArena> pinned;
  store.Get({Id(2), Id(4)}, reader, std::chrono::milliseconds(0), [&](auto locs) { pinned = locs; });
  store.Delete({Id(1), Id(3)});
  REQUIRE(store.used() == 2048);
  // Objects 2 and 4 are pinned (a reader has their bytes mapped): they cannot move.
  auto split = store.Create(Id(5), 2048, owner);
  REQUIRE(split.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(split.status().message()),
             Catch::Contains("2048 of 4096 bytes free, but split up by objects in use (at most 1024 in one piece)"));
  // Released, they move to the front: 2 KiB in one piece, and their bytes with them.
  store.Release({Id(2), Id(4)}, reader);
  auto made = store.Create(Id(5), 2048, owner);
  REQUIRE(made.ok());
  CHECK(made->offset == 2048);
  std::vector<ObjectLocationInArena> moved;
  store.Get({Id(2), Id(4)}, reader, std::chrono::milliseconds(0), [&](auto locs) { moved = locs; });
  REQUIRE(moved.size() == 2);
  CHECK(moved[0].offset == 0);
  CHECK(moved[1].offset == 1024);
  CHECK(std::string(arena.data() + moved[0].offset, 1024) == std::string(1024, 'a' + 2));
  CHECK(std::string(arena.data() + moved[1].offset, 1024) == std::string(1024, 'a' + 4));
}

TEST_CASE("a Get waits for an object sealed later", "[object_store]") {
  EventLoop loop;
  LocalObjectStore store(4096, &loop);
  WorkerID w = WorkerID::FromRandom();
  std::vector<ObjectLocationInArena> got;
  store.Get({Id(7)}, w, std::chrono::milliseconds(10000), [&](auto locs) { got = locs; });
  CHECK(got.empty());
  REQUIRE(store.Create(Id(7), 10, w).ok());
  REQUIRE(store.Seal(Id(7)).ok());
  REQUIRE(got.size() == 1);
  CHECK(got[0].found);
}

TEST_CASE("a store whose pages /dev/shm cannot hold says ObjectStoreFull and frees the range", "[object_store]") {
  EventLoop loop;
  uint64_t room = 8192;  // what the file system can still hold
  std::vector<uint64_t> asked;
  LocalObjectStore store(1 << 20, &loop, [&](uint64_t end) {
    asked.push_back(end);
    return end <= room ? absl::OkStatus() : absl::ResourceExhaustedError("no room in /dev/shm");
  });
  WorkerID owner = WorkerID::FromRandom();
  REQUIRE(store.Create(ObjectID::FromRandom(), 4096, owner).ok());
  auto too_far = store.Create(ObjectID::FromRandom(), 8192, owner);
  REQUIRE_FALSE(too_far.ok());
  CHECK(too_far.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(too_far.status().message()), Catch::Contains("no room in /dev/shm"));
  CHECK(store.used() == 4096);  // the failed object holds nothing
  CHECK(store.Create(ObjectID::FromRandom(), 4096, owner).ok());
  CHECK(asked == std::vector<uint64_t>{4096, 12288, 8192});
}

TEST_CASE("an arena is sparse until reserved, and reserving past /dev/shm's room fails cleanly", "[object_store]") {
  std::string path = "/dev/shm/orb-store-test-" + std::to_string(::getpid());
  auto arena = ShmArena::Create(path, size_t{1} << 40);  // 1 TiB: larger than any /dev/shm here
  REQUIRE(arena.ok());
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(st.st_blocks == 0);  // nothing taken yet
  CHECK((*arena)->Reserve(1 << 20).ok());
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(st.st_blocks * 512 >= (64 << 20));  // one 64 MiB step
  absl::Status full = (*arena)->Reserve(size_t{1} << 40);
  CHECK(full.code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(full.message()), Catch::Contains("no room"));
}
