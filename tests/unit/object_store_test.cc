#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <future>
#include <thread>

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

TEST_CASE("a dead owner's objects are freed; a full store evicts pulled copies, then says ObjectStoreFull",
          "[object_store]") {
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
  store.ForgetWorker(gone);  // its owner died: nobody can reference it any more
  CHECK_FALSE(store.Contains(Id(1)));
  CHECK(store.used() == 2048);
  // A copy pulled from another node is evictable: it goes to make room.
  REQUIRE(store.Create(Id(5), 2048, WorkerID::Nil(), /*primary=*/false).ok());
  REQUIRE(store.Seal(Id(5)).ok());
  REQUIRE(store.Create(Id(3), 2048, alive).ok());
  CHECK_FALSE(store.Contains(Id(5)));
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

TEST_CASE("an object whose writer dies before sealing is aborted, so a retry writes it afresh", "[object_store]") {
  EventLoop loop;
  LocalObjectStore store(1 << 20, &loop);
  WorkerID owner = WorkerID::FromRandom();  // the caller that owns a task's result
  WorkerID writer = WorkerID::FromRandom();  // the worker running the task
  WorkerID bystander = WorkerID::FromRandom();
  REQUIRE(store.Create(Id(1), 4096, owner, /*primary=*/true, writer).ok());
  uint64_t used = store.used();
  store.ForgetWorker(bystander);  // another worker's death changes nothing
  CHECK(store.used() == used);
  store.ForgetWorker(writer);  // killed between Create and Seal
  CHECK(store.used() == 0);
  CHECK(store.num_objects() == 0);
  // The retry on another worker creates it anew (not "already exists": that would make
  // its write a no-op and leave the owner waiting), seals it, and it can be read.
  WorkerID retry = WorkerID::FromRandom();
  auto again = store.Create(Id(1), 4096, owner, /*primary=*/true, retry);
  REQUIRE(again.ok());
  CHECK_FALSE(again->already_exists);
  REQUIRE(store.Seal(Id(1)).ok());
  store.ForgetWorker(retry);  // a sealed object outlives its writer: its owner holds it
  CHECK(store.Contains(Id(1)));
}

namespace {
// Runs `fn` on the loop's thread and waits for it.
template <class F>
void OnLoop(EventLoop& loop, F fn) {
  std::promise<void> done;
  loop.Post([&] {
    fn();
    done.set_value();
  });
  done.get_future().wait();
}
std::string TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}
// Spill files in `dir` (not the spiller's lock).
size_t FilesIn(const std::string& dir) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator(); ++it) {
    n += it->path().extension() == ".bin";
  }
  return n;
}
}  // namespace

TEST_CASE("a full store spills its oldest objects to disk, restores them on Get, and deletes their files",
          "[object_store][spill]") {
  const uint64_t kCapacity = 1 << 20, kObject = 256 << 10;
  std::vector<char> arena(kCapacity);
  std::string dir = TempDir("orb-spill-test");
  EventLoop loop;
  loop.Start();
  SpillOptions spill;
  spill.spiller = std::make_unique<ObjectSpiller>(dir, arena.data(), &loop);
  spill.threshold = 1.0;
  spill.min_batch_bytes = 0;
  auto store = std::make_unique<LocalObjectStore>(kCapacity, &loop, nullptr, nullptr, std::move(spill));
  WorkerID owner = WorkerID::FromRandom(), reader = WorkerID::FromRandom();
  auto write = [&](int n) {
    OnLoop(loop, [&] {
      auto created = store->Create(Id(n), kObject, owner);
      REQUIRE(created.ok());
      std::memset(arena.data() + created->offset, 'a' + n, kObject);
      REQUIRE(store->Seal(Id(n)).ok());
    });
  };
  for (int n = 1; n <= 4; ++n) write(n);  // the store is full
  // Without spilling this would be ObjectStoreFull; here the oldest goes to disk.
  std::promise<absl::StatusOr<LocalObjectStore::Created>> fifth;
  OnLoop(loop, [&] { store->CreateOrSpill(Id(5), kObject, owner, true, WorkerID(), [&](auto c) { fifth.set_value(c); }); });
  auto created = fifth.get_future().get();
  REQUIRE(created.ok());
  OnLoop(loop, [&] {
    std::memset(arena.data() + created->offset, 'a' + 5, kObject);
    REQUIRE(store->Seal(Id(5)).ok());
    CHECK(store->IsSpilled(Id(1)));
    CHECK(store->Contains(Id(1)));  // still there, on disk
    CHECK(store->used() <= kCapacity);
  });
  CHECK(FilesIn(dir) == 1);

  // A Get brings it back (spilling another to make room), with its bytes.
  std::promise<std::vector<ObjectLocationInArena>> got;
  OnLoop(loop, [&] { store->Get({Id(1)}, reader, std::chrono::milliseconds(0), [&](auto locs) { got.set_value(locs); }); });
  auto locs = got.get_future().get();
  REQUIRE(locs[0].found);
  CHECK(std::string(arena.data() + locs[0].offset, 16) == std::string(16, 'a' + 1));
  SpillStats stats;
  OnLoop(loop, [&] {
    store->Release({Id(1)}, reader);
    stats = store->spill_stats();
  });
  CHECK(stats.restored_objects_total == 1);
  CHECK(stats.spilled_objects_total >= 2);

  // Freed objects take their spill files with them.
  OnLoop(loop, [&] { store->Delete({Id(1), Id(2), Id(3), Id(4), Id(5)}); });
  bool files_gone = false;
  for (int i = 0; i < 200 && !files_gone; ++i) {
    files_gone = FilesIn(dir) == 0;
    if (!files_gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(files_gone);
  OnLoop(loop, [&] { store.reset(); });
  loop.Stop();
  std::filesystem::remove_all(dir);
}

TEST_CASE("a spill to a disk that cannot take it is OutOfDisk for the create, and nothing is lost",
          "[object_store][spill]") {
  const uint64_t kCapacity = 1 << 20, kObject = 512 << 10;
  std::vector<char> arena(kCapacity);
  EventLoop loop;
  loop.Start();
  SpillOptions spill;
  spill.spiller = std::make_unique<ObjectSpiller>("/dev/null/spill", arena.data(), &loop);  // never a directory
  spill.threshold = 1.0;
  auto store = std::make_unique<LocalObjectStore>(kCapacity, &loop, nullptr, nullptr, std::move(spill));
  WorkerID owner = WorkerID::FromRandom();
  OnLoop(loop, [&] {
    for (int n = 1; n <= 2; ++n) {
      REQUIRE(store->Create(Id(n), kObject, owner).ok());
      REQUIRE(store->Seal(Id(n)).ok());
    }
  });
  std::promise<absl::StatusOr<LocalObjectStore::Created>> third;
  OnLoop(loop, [&] { store->CreateOrSpill(Id(3), kObject, owner, true, WorkerID(), [&](auto c) { third.set_value(c); }); });
  auto created = third.get_future().get();
  CHECK(created.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(created.status().message()), Catch::Contains("out of disk") && Catch::Contains("/dev/null/spill"));
  OnLoop(loop, [&] {
    CHECK(store->Contains(Id(1)));
    CHECK(store->Contains(Id(2)));
    CHECK_FALSE(store->IsSpilled(Id(1)));
    CHECK(store->spill_stats().spill_failures_total == 1);
    store.reset();
  });
  loop.Stop();
}

TEST_CASE("an adopted copy becomes a primary that is never evicted; a handed-over primary goes without its copies",
          "[object_store]") {
  EventLoop loop;
  LocalObjectStore store(4096, &loop);
  WorkerID owner = WorkerID::FromRandom();
  NodeID copier = NodeID::FromRandom(), other = NodeID::FromRandom();
  std::vector<std::pair<ObjectID, std::vector<NodeID>>> orphaned;
  store.OnCopiesOrphaned([&](const ObjectID& id, const std::vector<NodeID>& nodes) { orphaned.emplace_back(id, nodes); });

  // A pulled copy (evictable) is adopted: the primary now, with the copies made of it.
  REQUIRE(store.Create(Id(1), 2048, owner, /*primary=*/false).ok());
  REQUIRE(store.Seal(Id(1)).ok());
  CHECK(store.Primaries().empty());
  REQUIRE(store.Adopt(Id(1), owner, {copier}).ok());
  auto primaries = store.Primaries();
  REQUIRE(primaries.size() == 1);
  CHECK(primaries[0].id == Id(1));
  CHECK(primaries[0].owner == owner);
  CHECK(primaries[0].copies == std::vector<NodeID>{copier});
  // It is not evicted for room any more.
  REQUIRE(store.Create(Id(2), 2048, owner).ok());
  CHECK(store.Create(Id(3), 2048, owner).status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(store.Contains(Id(1)));
  CHECK(store.Adopt(Id(9), owner, {}).code() == absl::StatusCode::kNotFound);
  CHECK(store.Adopt(Id(2), owner, {}).code() == absl::StatusCode::kNotFound);  // not sealed

  // Handed over, the copy here goes; the copies elsewhere are the new primary's now.
  REQUIRE(store.AddCopies({Id(1)}, other).empty());
  store.HandOver(Id(1));
  CHECK_FALSE(store.Contains(Id(1)));
  CHECK(orphaned.empty());
  // Freed as a primary, its copies go with it.
  REQUIRE(store.Seal(Id(2)).ok());
  REQUIRE(store.AddCopies({Id(2)}, copier).empty());
  store.Delete({Id(2)});
  REQUIRE(orphaned.size() == 1);
  CHECK(orphaned[0].second == std::vector<NodeID>{copier});
}
