// Spilling on a CLI cluster: a 256 MiB store holds a 1 GiB working set written by Puts
// (primary copies go to disk and come back on Get, for tasks, and for another node),
// spill files go with their objects, and a node whose spill directory is a tiny tmpfs
// answers OutOfDiskError and keeps serving. Nothing acknowledged is lost when the spill
// disk fills; damaged spill files are detected (and rebuilt from lineage); a second
// spill directory takes over from a full one; a raylet killed mid-spill leaves nothing
// that a new one trusts.
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <thread>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_cluster.h"

namespace {

// 64 MiB of bytes (msgpack stores a byte vector as it is; small integers it would shrink).
constexpr int64_t kBlock = 64 << 20;
using Block = std::vector<uint8_t>;

int64_t Checksum(Block v) {
  int64_t s = 0;
  for (auto x : v) s += x;
  return s;
}

// Puts 16 MiB objects on this node until the store says why it cannot; then reads the
// first one back.
std::string FillUntilRefused() {
  std::vector<orb::ObjectRef<Block>> kept;
  try {
    for (int i = 0; i < 64; ++i) kept.push_back(orb::Put(Block(16 << 20, static_cast<uint8_t>(i))));
    return "no error after 1 GiB";
  } catch (const orb::OutOfDiskError& e) {
    int first = (*kept.at(0).Get(30000))[0];
    return "OutOfDiskError after " + std::to_string(kept.size()) + " puts (first reads " + std::to_string(first) +
           "): " + e.what();
  } catch (const orb::Error& e) {
    return std::string("other error: ") + e.what();
  }
}

// The spill disk fills up (a 128 MiB store, 192 MiB of disk): 28 Puts of 8 MiB, every
// ref held, then more until one is refused (the store and the disk are full). Each
// acknowledged object must read back right or fail transiently while there is no room,
// and read back right once room returns (the newest 14 dropped).
std::string FullSpillDisk() {
  constexpr int kPuts = 28, kMorePuts = 20;
  constexpr size_t kSize = 8 << 20;
  std::vector<orb::ObjectRef<Block>> acked;
  std::vector<int> values;
  int refused = 0;
  std::string refusal;
  for (int i = 0; i < kPuts || (refused == 0 && i < kPuts + kMorePuts); ++i) {
    try {
      acked.push_back(orb::Put(Block(kSize, static_cast<uint8_t>(i + 1))));
      values.push_back(i + 1);
    } catch (const orb::OutOfDiskError& e) {
      refused++;
      refusal = e.what();
    }
  }
  int ok = 0, transient = 0, lost = 0, wrong = 0;
  std::string first_loss;
  std::vector<bool> verified(acked.size(), false);
  auto read = [&](size_t i) {
    try {
      auto v = acked[i].Get(60000);
      bool right = v->size() == kSize && Checksum(*v) == static_cast<int64_t>(values[i]) * static_cast<int64_t>(kSize);
      (right ? ok : wrong)++;
      verified[i] = verified[i] || right;
      return true;
    } catch (const orb::ObjectStoreFullError&) {
      transient++;
    } catch (const orb::OutOfDiskError&) {
      transient++;
    } catch (const orb::Error& e) {
      lost++;
      if (first_loss.empty()) first_loss = e.what();
    }
    return false;
  };
  // Before room returns: the newest (in memory) and the three oldest (on disk).
  for (size_t i = 0; i < acked.size(); ++i) {
    if (i < 3 || i + 14 >= acked.size()) read(i);
  }
  std::string before = "before: ok " + std::to_string(ok) + " transient " + std::to_string(transient) + " lost " +
                       std::to_string(lost) + " wrong " + std::to_string(wrong);
  bool newest_verified = true;
  for (size_t i = acked.size() >= 14 ? acked.size() - 14 : 0; i < acked.size(); ++i) newest_verified &= verified[i];
  // Room returns: the newest 14 go. Every other one reads back, right, within a minute.
  size_t keep = acked.size() >= 14 ? acked.size() - 14 : 0;
  acked.resize(keep);
  ok = transient = lost = wrong = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (size_t i = 0; i < keep; ++i) {
    while (!read(i) && lost == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  bool all_verified = newest_verified;
  for (size_t i = 0; i < keep; ++i) all_verified &= verified[i];
  return "acked " + std::to_string(values.size()) + " refused " + std::to_string(refused) + "; " + before +
         "; after: ok " + std::to_string(ok) + " lost " + std::to_string(lost) + " wrong " + std::to_string(wrong) +
         (all_verified ? "; every acknowledged object read back right" : "; NOT every acknowledged object read back") +
         (first_loss.empty() ? "" : "; first loss: " + first_loss) + (refusal.empty() ? "" : "; refusal: " + refusal);
}

// Puts 16 MiB objects for `seconds`, each dropped after the next (the store spills all along).
int KeepSpilling(int seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::vector<orb::ObjectRef<Block>> window;
  int n = 0;
  while (std::chrono::steady_clock::now() < until) {
    window.push_back(orb::Put(Block(16 << 20, static_cast<uint8_t>(n++))));
    if (window.size() > 12) window.erase(window.begin());
  }
  return n;
}

Block MakeBlock(int value) { return Block(kBlock, static_cast<uint8_t>(value)); }
int Ping() { return 1; }
ORB_REMOTE(Checksum, FillUntilRefused, FullSpillDisk, KeepSpilling, MakeBlock, Ping);

size_t FilesIn(const std::filesystem::path& dir) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator(); ++it) ++n;
  return n;
}

// Spill files in `dir`, complete or being written (not the raylet's lock).
size_t SpillFilesIn(const std::filesystem::path& dir) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator(); ++it) {
    n += it->path().extension() == ".bin" || it->path().extension() == ".partial";
  }
  return n;
}

std::filesystem::path Scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("orb-spill-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// A scratch directory, a tmpfs of `size` when one is given and this test may mount it;
// unmounted and removed when it goes (also when the cluster beside it failed to start).
struct ScratchDir {
  explicit ScratchDir(const std::string& name, const std::string& size = "") : path(Scratch(name)) {
    if (!size.empty()) mounted = ::mount("tmpfs", path.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~ScratchDir() {
    if (mounted) ::umount(path.c_str());
    std::filesystem::remove_all(path);
  }
  std::string string() const { return path.string(); }
  std::filesystem::path path;
  bool mounted = false;
};

// A head with a 256 MiB store spilling to a directory of its own, and, where this test
// may mount tmpfs: before it on the head a 1 MiB spill directory (full for any batch);
// a node whose spill directory is an 8 MiB tmpfs; a node with a 128 MiB store whose
// spill directory is a 192 MiB tmpfs.
struct SpillCluster {
  ScratchDir head_spill{"head"};
  ScratchDir head_small{"head-small", "1m"};
  ScratchDir tiny_spill{"tiny", "8m"};
  ScratchDir full_spill{"full", "192m"};
  bool mounted = head_small.mounted && tiny_spill.mounted && full_spill.mounted;
  std::string full_node_flags = "--num-cpus 1 --object-store-memory 134217728 --resources '{\"full\": 1}' "
                                "--object-spilling-directory " + full_spill.string();
  orb::testing::CliCluster cluster{
      "spill",
      "--num-cpus 2 --object-store-memory 268435456 --resources '{\"head\": 2}' --object-spilling-directory " +
          (mounted ? head_small.string() + "," : std::string()) + head_spill.string(),
      mounted ? std::vector<std::string>{"--num-cpus 1 --object-store-memory 67108864 --resources '{\"tiny\": 1}' "
                                         "--object-spilling-directory " + tiny_spill.string(),
                                         full_node_flags}
              : std::vector<std::string>{}};
};

SpillCluster& Cluster() {
  static SpillCluster c;
  return c;
}

}  // namespace

// Whether `id` is on disk only, on any node, as `orb list objects` says.
bool OnDiskOnly(orb::testing::CliCluster& c, const std::string& id) {
  auto objects = nlohmann::json::parse(orb::testing::Run(c.orb_ + " list objects --format json --address " + c.address_));
  for (const auto& o : objects) {
    if (o["object_id"] != id) continue;
    for (const auto& copy : o["copies"]) {
      if (copy["spilled"] && !copy["in_memory"]) return true;
    }
  }
  return false;
}

TEST_CASE("a 256 MiB store holds a 1 GiB working set of Puts by spilling; files go with the refs", "[spill]") {
  auto& c = Cluster();
  // The oldest: spilled first, then read by a task on another node (the transfer
  // restores it).
  auto small = orb::Put(Block(16 << 20, 42));
  std::vector<orb::ObjectRef<Block>> refs;
  for (int i = 0; i < 16; ++i) refs.push_back(orb::Put(Block(kBlock, static_cast<uint8_t>(i))));
  CHECK(SpillFilesIn(c.head_spill.path) > 0);
  CHECK(OnDiskOnly(c.cluster, small.ID()));
  if (c.mounted) {
    // Two spill directories, the first too small for any batch: spills went on into the
    // second, and `orb memory` shows both.
    CHECK(SpillFilesIn(c.head_small.path) == 0);
    auto memory = nlohmann::json::parse(
        orb::testing::Run(c.cluster.orb_ + " memory --format json --address " + c.cluster.address_));
    bool shown = false;
    for (const auto& node : memory["nodes"]) {
      const auto& dirs = node["spill_directories"];
      if (dirs.size() != 2 || dirs[0]["path"] != c.head_small.string()) continue;
      shown = true;
      CHECK(dirs[0]["failures_total"].get<int64_t>() >= 1);
      CHECK(dirs[0]["spilled_bytes"].get<int64_t>() == 0);
      CHECK(dirs[0]["filesystem_total_bytes"].get<int64_t>() == 1 << 20);
      CHECK(dirs[1]["path"] == c.head_spill.string());
      CHECK(dirs[1]["spilled_bytes"].get<int64_t>() > 0);
    }
    CHECK(shown);
    std::string table = orb::testing::Run(c.cluster.orb_ + " memory --address " + c.cluster.address_);
    CHECK_THAT(table, Catch::Contains("Spill directories") && Catch::Contains(c.head_small.string()));
  }
  if (c.mounted) CHECK(*orb::Task(Checksum).SetResource("tiny", 1).Remote(small).Get(60000) == 42ll * (16 << 20));
  // Every value reads back right, the oldest from disk; and a task reads one too.
  for (int i = 0; i < 16; ++i) {
    auto v = orb::Get(refs[i], 60000);
    REQUIRE(v->size() == static_cast<size_t>(kBlock));
    CHECK((*v)[0] == i);
    CHECK((*v)[kBlock - 1] == i);
  }
  CHECK(*orb::Task(Checksum).Remote(refs[0]).Get(60000) == 0);
  CHECK(*orb::Task(Checksum).Remote(refs[3]).Get(60000) == 3 * kBlock);
  refs.clear();
  small = orb::ObjectRef<Block>();
  CHECK(orb::testing::WaitFor([&] { return SpillFilesIn(c.head_spill.path) == 0; }, std::chrono::seconds(20)));
}

TEST_CASE("spilling to a full disk is OutOfDiskError for the caller; the raylet keeps serving", "[spill]") {
  auto& c = Cluster();
  if (!c.mounted) {
    WARN("skipped: this test cannot mount a tmpfs (it needs CAP_SYS_ADMIN)");
    return;
  }
  auto tiny = orb::Task(FillUntilRefused).SetResource("tiny", 1).Remote();
  std::string outcome = *tiny.Get(120000);
  INFO(outcome);
  CHECK(outcome.rfind("OutOfDiskError after ", 0) == 0);
  CHECK(outcome.find("(first reads 0)") != std::string::npos);  // acknowledged Puts are intact
  CHECK(outcome.find(c.tiny_spill.string()) != std::string::npos);
  // The node still runs tasks and stores objects.
  CHECK(*orb::Task(Ping).SetResource("tiny", 1).Remote().Get(30000) == 1);
}

TEST_CASE("a full spill disk loses nothing acknowledged: every object reads back once room returns", "[spill]") {
  auto& c = Cluster();
  if (!c.mounted) {
    WARN("skipped: this test cannot mount a tmpfs (it needs CAP_SYS_ADMIN)");
    return;
  }
  std::string outcome = *orb::Task(FullSpillDisk).SetResource("full", 1).Remote().Get(300000);
  INFO(outcome);
  // Before room returned: nothing lost or wrong (transient errors allowed); after: the same,
  // and every acknowledged object was read back with its bytes.
  CHECK_THAT(outcome, Catch::Contains(" lost 0 wrong 0; after: ok "));
  CHECK_THAT(outcome, Catch::Contains(" lost 0 wrong 0; every acknowledged object read back right"));
  CHECK_THAT(outcome, !Catch::Contains("first loss"));
  CHECK_THAT(outcome, !Catch::Contains("refused 0;"));  // the store and the disk did fill
  CHECK_THAT(outcome, Catch::Contains(c.full_spill.string()));  // the refusal names the disk
  CHECK(*orb::Task(Ping).SetResource("full", 1).Remote().Get(30000) == 1);
}

TEST_CASE("a damaged spill file is ObjectLostError naming it for a Put, and rebuilt from lineage for a task",
          "[spill]") {
  auto& c = Cluster();
  auto put = orb::Put(Block(kBlock, 9));
  auto made = orb::Task(MakeBlock).SetResource("head", 1).Remote(7);
  REQUIRE((*made.Get(60000))[0] == 7);
  std::vector<orb::ObjectRef<Block>> pressure;
  for (int i = 0; i < 6 && !(OnDiskOnly(c.cluster, put.ID()) && OnDiskOnly(c.cluster, made.ID())); ++i) {
    pressure.push_back(orb::Put(Block(kBlock, 1)));
  }
  REQUIRE(OnDiskOnly(c.cluster, put.ID()));
  REQUIRE(OnDiskOnly(c.cluster, made.ID()));
  // Cut every spill file short: the bytes of both are gone from disk.
  for (const auto& entry : std::filesystem::directory_iterator(c.head_spill.path)) {
    if (entry.path().extension() == ".bin") std::filesystem::resize_file(entry.path(), 4096);
  }
  try {
    orb::Get(put, 60000);
    FAIL("a Put whose spill file is damaged read back");
  } catch (const orb::ObjectLostError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains(c.head_spill.string()) && Catch::Contains("truncated") &&
                                          Catch::Contains("cannot be rebuilt"));
  }
  auto rebuilt = orb::Get(made, 60000);
  REQUIRE(rebuilt->size() == static_cast<size_t>(kBlock));
  CHECK((*rebuilt)[0] == 7);
  CHECK((*rebuilt)[kBlock - 1] == 7);
}

TEST_CASE("a raylet killed with SIGKILL mid-spill: the node started in its place trusts none of its files",
          "[spill][faults]") {
  auto& c = Cluster();
  if (!c.mounted) {
    WARN("skipped: this test cannot mount a tmpfs (it needs CAP_SYS_ADMIN)");
    return;
  }
  std::string pid_text = orb::testing::RunAnyway("pgrep -f -- '[r]aylet.*" + c.full_spill.string() + "' | head -n 1");
  REQUIRE(!pid_text.empty());
  pid_t raylet = static_cast<pid_t>(std::stol(pid_text));
  auto spilling = orb::Task(KeepSpilling).SetResource("full", 1).SetMaxRetries(0).Remote(60);
  // Kill it while a spill file is being written, if one is seen within 30 s.
  bool partial_seen = orb::testing::WaitFor(
      [&] {
        std::error_code ec;
        for (auto it = std::filesystem::directory_iterator(c.full_spill.path, ec);
             !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
          if (it->path().extension() == ".partial") return true;
        }
        return false;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(1));
  REQUIRE(::kill(raylet, SIGKILL) == 0);
  INFO("a partial spill file was seen before the kill: " << partial_seen);
  CHECK(FilesIn(c.full_spill.path) > 0);  // what it left: its lock, its files
  CHECK_THROWS_AS(spilling.Get(60000), orb::Error);
  // The same node again, on the same spill directory.
  orb::testing::Run(c.cluster.orb_ + " start --address " + c.cluster.address_ + " " + c.full_node_flags);
  REQUIRE(orb::testing::WaitFor(
      [&] {
        int alive = 0;
        for (const auto& n : orb::Nodes()) alive += n.alive;
        return alive == 3;
      },
      std::chrono::seconds(30)));
  auto left = std::vector<std::string>();
  for (const auto& entry : std::filesystem::directory_iterator(c.full_spill.path)) left.push_back(entry.path().filename());
  INFO("left in the spill directory: " << left.size());
  REQUIRE(left.size() == 1);  // the new raylet's lock, nothing of the dead one's
  CHECK(left[0].rfind("spill-", 0) == 0);
  CHECK(left[0].find(".lock") != std::string::npos);
  // And it spills and restores right.
  std::string outcome = *orb::Task(FullSpillDisk).SetResource("full", 1).Remote().Get(300000);
  INFO(outcome);
  CHECK_THAT(outcome, Catch::Contains("every acknowledged object read back right"));
}
