// Spilling under every shortage, on a store with a real ObjectSpiller: a restore with
// no room waits and then fails transiently (never a loss), a spill that fails part-way
// keeps what it wrote whole and loses nothing, damaged files are detected, a full
// directory is skipped for another, and files of stopped instances are removed at start.
// The full disks are small tmpfs mounts: cases that need one are skipped with a message
// where the test may not mount (it needs CAP_SYS_ADMIN).
#include <sys/file.h>
#include <sys/mount.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "common/event_loop.h"
#include "raylet/object_store/local_object_store.h"
#include "wait_for.h"

using namespace orb;
using orb::testing::WaitFor;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kCapacity = 1 << 20;
constexpr uint64_t kObject = 256 << 10;  // four fill the store

ObjectID Id(int n) { return ObjectID::ForPut(TaskID::Nil(), static_cast<uint32_t>(n)); }

// Runs `fn` on the loop's thread, waits for it, and returns what it returns.
template <class F>
auto OnLoop(EventLoop& loop, F fn) -> decltype(fn()) {
  std::promise<decltype(fn())> done;
  loop.Post([&] {
    if constexpr (std::is_void_v<decltype(fn())>) {
      fn();
      done.set_value();
    } else {
      done.set_value(fn());
    }
  });
  return done.get_future().get();
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  return names;
}

size_t SpillFilesIn(const std::string& dir) {
  size_t n = 0;
  for (const auto& name : FilesIn(dir)) n += name.find(".bin") != std::string::npos;
  return n;
}


// A directory of its own, optionally a tmpfs of `tmpfs_bytes`; removed (unmounted) at the end.
struct ScratchDir {
  explicit ScratchDir(const std::string& name, uint64_t tmpfs_bytes = 0)
      : path((fs::temp_directory_path() / ("orb-spill-unit-" + name + "-" + std::to_string(::getpid()))).string()) {
    fs::remove_all(path);
    fs::create_directories(path);
    if (tmpfs_bytes > 0) {
      mounted = ::mount("tmpfs", path.c_str(), "tmpfs", 0, ("size=" + std::to_string(tmpfs_bytes)).c_str()) == 0;
    }
  }
  ~ScratchDir() {
    if (mounted) ::umount(path.c_str());
    fs::remove_all(path);
  }
  std::string path;
  bool mounted = false;
};

// A store over a plain byte arena, its loop running, spilling to `dirs`.
struct SpillingStore {
  explicit SpillingStore(std::vector<std::string> dirs, uint64_t min_batch_bytes = 0) : arena(kCapacity) {
    loop.Start();
    SpillOptions spill;
    spill.spiller = std::make_unique<ObjectSpiller>(std::move(dirs), arena.data(), &loop);
    spill.threshold = 1.0;
    spill.min_batch_bytes = min_batch_bytes;
    store = std::make_unique<LocalObjectStore>(kCapacity, &loop, nullptr, nullptr, std::move(spill));
  }
  ~SpillingStore() {
    OnLoop(loop, [&] { store.reset(); });
    loop.Stop();
  }

  // Creates object `n` filled with its letter, spilling to make room; the create's status.
  absl::Status Put(int n) {
    std::promise<absl::StatusOr<LocalObjectStore::Created>> created;
    OnLoop(loop, [&] {
      store->CreateOrSpill(Id(n), kObject, owner, true, WorkerID(), [&](auto c) { created.set_value(c); });
    });
    auto c = created.get_future().get();
    if (!c.ok()) return c.status();
    return OnLoop(loop, [&] {
      std::memset(arena.data() + c->offset, 'a' + n, kObject);
      return store->Seal(Id(n));
    });
  }
  // Reads object `n` for `reader`: its location (pinned when found).
  ObjectLocationInArena Get(int n, const WorkerID& who) {
    std::promise<std::vector<ObjectLocationInArena>> got;
    OnLoop(loop, [&] {
      store->Get({Id(n)}, who, std::chrono::milliseconds(0), [&](auto locs) { got.set_value(locs); });
    });
    return got.get_future().get()[0];
  }
  bool HoldsBytesOf(const ObjectLocationInArena& loc, int n) {
    return loc.found && loc.size == kObject && arena[loc.offset] == 'a' + n && arena[loc.offset + kObject - 1] == 'a' + n;
  }
  bool IsSpilled(int n) {
    return OnLoop(loop, [&] { return store->IsSpilled(Id(n)); });
  }

  std::vector<char> arena;
  EventLoop loop;
  std::unique_ptr<LocalObjectStore> store;
  WorkerID owner = WorkerID::FromRandom();
  WorkerID reader = WorkerID::FromRandom();
};

}  // namespace

TEST_CASE("a restore with no room waits, then fails transiently; the object reads back once there is room",
          "[spill]") {
  ScratchDir dir("noroom");
  SpillingStore s({dir.path});
  for (int n = 1; n <= 5; ++n) REQUIRE(s.Put(n).ok());  // the fifth spilled the first
  REQUIRE(s.IsSpilled(1));
  // Every object in memory pinned by a reader: nothing can leave to make room.
  for (int n = 2; n <= 5; ++n) {
    if (!s.IsSpilled(n)) REQUIRE(s.Get(n, s.reader).found);
  }
  auto start = std::chrono::steady_clock::now();
  auto first = s.Get(1, s.reader);
  auto waited = std::chrono::steady_clock::now() - start;
  CHECK_FALSE(first.found);
  CHECK(absl::IsResourceExhausted(first.unreadable));
  CHECK_THAT(std::string(first.unreadable.message()), Catch::Contains("no room") && Catch::Contains(Id(1).Hex()));
  CHECK(waited < std::chrono::seconds(5));  // fails fast when nothing is going to change
  CHECK(s.IsSpilled(1));                    // still on disk: nothing lost

  // A Get that waits while a reader lets go gets the object.
  std::promise<std::vector<ObjectLocationInArena>> got;
  OnLoop(s.loop, [&] {
    s.store->Get({Id(1)}, s.reader, std::chrono::milliseconds(0), [&](auto locs) { got.set_value(locs); });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  OnLoop(s.loop, [&] { s.store->Release({Id(2), Id(3), Id(4), Id(5)}, s.reader); });
  auto later = got.get_future().get()[0];
  CHECK(s.HoldsBytesOf(later, 1));
}

TEST_CASE("a full spill disk makes a restore fail with OutOfDisk naming it, and loses nothing", "[spill]") {
  // Room on disk for two objects: the first spill takes it.
  ScratchDir disk("fulldisk", 2 * kObject + 64 * 1024);
  if (!disk.mounted) {
    WARN("skipped: this test cannot mount a tmpfs (it needs CAP_SYS_ADMIN)");
    return;
  }
  SpillingStore s({disk.path});
  for (int n = 1; n <= 6; ++n) REQUIRE(s.Put(n).ok());  // 1 and 2 on disk, 3..6 in memory
  REQUIRE(s.IsSpilled(1));
  REQUIRE(s.IsSpilled(2));
  absl::Status seventh = s.Put(7);  // would need a third object on disk
  CHECK(absl::IsFailedPrecondition(seventh));
  CHECK_THAT(std::string(seventh.message()), Catch::Contains(disk.path));

  // Reading a spilled object back needs one of 3..6 to leave memory, and the disk is full.
  auto first = s.Get(1, s.reader);
  CHECK_FALSE(first.found);
  CHECK(absl::IsFailedPrecondition(first.unreadable));
  CHECK_THAT(std::string(first.unreadable.message()), Catch::Contains("out of disk") && Catch::Contains(disk.path));
  CHECK(s.IsSpilled(1));

  // Room returns (the owner lets go of two objects): every object reads back, right.
  OnLoop(s.loop, [&] { s.store->Delete({Id(5), Id(6)}); });
  for (int n = 1; n <= 4; ++n) {
    auto loc = s.Get(n, s.reader);
    INFO("object " << n);
    CHECK(s.HoldsBytesOf(loc, n));
    OnLoop(s.loop, [&] { s.store->Release({Id(n)}, s.reader); });
  }
  CHECK(s.IsSpilled(1));  // still on disk after reading
}

TEST_CASE("a spill that fails part-way keeps the objects written whole and the rest in memory", "[spill]") {
  // Room for one and a half objects: a batch of two writes one.
  ScratchDir disk("partial", kObject + kObject / 2);
  if (!disk.mounted) {
    WARN("skipped: this test cannot mount a tmpfs (it needs CAP_SYS_ADMIN)");
    return;
  }
  SpillingStore s({disk.path}, /*min_batch_bytes=*/2 * kObject);
  for (int n = 1; n <= 4; ++n) REQUIRE(s.Put(n).ok());
  REQUIRE(s.Put(5).ok());  // the batch (1, 2) wrote 1 only: room for 5
  CHECK(s.IsSpilled(1));
  CHECK_FALSE(s.IsSpilled(2));
  // Only complete files: the one holding object 1, cut after it; no partial file left.
  auto names = FilesIn(disk.path);
  size_t partial = 0, complete = 0;
  for (const auto& name : names) {
    partial += name.find(".partial") != std::string::npos;
    if (name.size() > 4 && name.substr(name.size() - 4) == ".bin") {
      complete++;
      CHECK(fs::file_size(disk.path + "/" + name) == kObject);
    }
  }
  CHECK(partial == 0);
  CHECK(complete == 1);
  SpillStats stats = OnLoop(s.loop, [&] { return s.store->spill_stats(); });
  CHECK(stats.spill_failures_total == 1);
  for (int n = 2; n <= 5; ++n) {
    INFO("object " << n);
    auto loc = s.Get(n, s.reader);
    CHECK(s.HoldsBytesOf(loc, n));
    OnLoop(s.loop, [&] { s.store->Release({Id(n)}, s.reader); });
  }
  // The disk is full now; with room in memory the spilled one reads back too.
  OnLoop(s.loop, [&] { s.store->Delete({Id(5)}); });
  CHECK(s.HoldsBytesOf(s.Get(1, s.reader), 1));
}

TEST_CASE("a damaged or truncated spill file is DataLoss naming it, never wrong bytes", "[spill]") {
  ScratchDir dir("damaged");
  SpillingStore s({dir.path}, /*min_batch_bytes=*/2 * kObject);
  for (int n = 1; n <= 5; ++n) REQUIRE(s.Put(n).ok());  // 1 and 2 spilled into one file
  REQUIRE(s.IsSpilled(1));
  REQUIRE(s.IsSpilled(2));
  auto names = FilesIn(dir.path);
  std::string file;
  for (const auto& name : names) {
    if (name.find(".bin") != std::string::npos) file = dir.path + "/" + name;
  }
  REQUIRE(!file.empty());
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('#');  // one byte of object 1
  }
  auto damaged = s.Get(1, s.reader);
  CHECK_FALSE(damaged.found);
  CHECK(absl::IsDataLoss(damaged.unreadable));
  CHECK_THAT(std::string(damaged.unreadable.message()), Catch::Contains(file) && Catch::Contains("checksum"));
  // The copy is gone here, so that its owner can rebuild it under the same ID.
  CHECK_FALSE(OnLoop(s.loop, [&] { return s.store->Contains(Id(1)); }));
  CHECK(OnLoop(s.loop, [&] { return s.store->Create(Id(1), kObject, s.owner).ok(); }));

  fs::resize_file(file, kObject + 10);  // object 2 cut short
  auto truncated = s.Get(2, s.reader);
  CHECK_FALSE(truncated.found);
  CHECK(absl::IsDataLoss(truncated.unreadable));
  CHECK_THAT(std::string(truncated.unreadable.message()), Catch::Contains(file) && Catch::Contains("truncated"));
  SpillStats stats = OnLoop(s.loop, [&] { return s.store->spill_stats(); });
  CHECK(stats.restore_failures_total == 2);
}

TEST_CASE("with two spill directories, a full one is skipped and spills go on into the other", "[spill]") {
  ScratchDir full("full", 64 * 1024);  // takes no object
  ScratchDir roomy("roomy");
  if (!full.mounted) {
    WARN("skipped: this test cannot mount a tmpfs (it needs CAP_SYS_ADMIN)");
    return;
  }
  SpillingStore s({full.path, roomy.path});
  for (int n = 1; n <= 10; ++n) REQUIRE(s.Put(n).ok());  // six spills
  CHECK(SpillFilesIn(full.path) == 0);
  CHECK(SpillFilesIn(roomy.path) == 6);
  auto dirs = OnLoop(s.loop, [&] { return s.store->spill_directories(); });
  REQUIRE(dirs.size() == 2);
  CHECK(dirs[0].path == full.path);
  CHECK(dirs[0].failures_total >= 1);
  CHECK_THAT(dirs[0].last_error, Catch::Contains(full.path));
  CHECK(dirs[0].filesystem_total_bytes > 0);
  CHECK(dirs[1].spilled_bytes == 6 * kObject);
  CHECK(dirs[1].files == 6);
  for (int n = 1; n <= 6; ++n) CHECK(s.IsSpilled(n));
  auto loc = s.Get(1, s.reader);
  CHECK(s.HoldsBytesOf(loc, 1));
}

TEST_CASE("spread over two directories; files of stopped instances are removed at start, a live one's kept",
          "[spill]") {
  ScratchDir a("spread-a"), b("spread-b");
  {
    SpillingStore s({a.path, b.path});
    for (int n = 1; n <= 8; ++n) REQUIRE(s.Put(n).ok());  // four spills, in turn
    CHECK(SpillFilesIn(a.path) == 2);
    CHECK(SpillFilesIn(b.path) == 2);
  }
  // The store above went with its files; a raylet killed with SIGKILL leaves its files,
  // complete and partial, and a lock no one holds.
  for (const char* name : {"spill-0badc0de-0.bin", "spill-0badc0de-1.bin.partial", "spill-0badc0de.lock",
                           "spill-1234-0.bin"}) {
    std::ofstream(a.path + "/" + name) << "left behind";
  }
  SpillingStore live({a.path});
  REQUIRE(live.Put(1).ok());
  for (int n = 2; n <= 5; ++n) REQUIRE(live.Put(n).ok());
  REQUIRE(SpillFilesIn(a.path) == 1);  // only the live instance's
  // Another instance starting beside it removes nothing of it.
  { SpillingStore second({a.path}); }
  CHECK(SpillFilesIn(a.path) == 1);
  auto loc = live.Get(1, live.reader);
  CHECK(live.HoldsBytesOf(loc, 1));
}
