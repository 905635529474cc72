// Spilling on a CLI cluster: a 256 MiB store holds a 1 GiB working set written by Puts
// (primary copies go to disk and come back on Get, for tasks, and for another node),
// spill files go with their objects, and a node whose spill directory is a tiny tmpfs
// answers OutOfDiskError and keeps serving.
#include <sys/mount.h>
#include <unistd.h>

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
int Ping() { return 1; }
ORB_REMOTE(Checksum, FillUntilRefused, Ping);

size_t FilesIn(const std::filesystem::path& dir) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator(); ++it) ++n;
  return n;
}

std::filesystem::path Scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("orb-spill-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// A head with a 256 MiB store spilling to a directory of its own, and, where this test
// may mount one, a node whose spill directory is an 8 MiB tmpfs.
struct SpillCluster {
  std::filesystem::path head_spill = Scratch("head");
  std::filesystem::path tiny_spill = Scratch("tiny");
  bool tiny_mounted = ::mount("tmpfs", tiny_spill.c_str(), "tmpfs", 0, "size=8m") == 0;
  orb::testing::CliCluster cluster{
      "spill",
      "--num-cpus 2 --object-store-memory 268435456 --object-spilling-directory " + head_spill.string(),
      tiny_mounted ? std::vector<std::string>{"--num-cpus 1 --object-store-memory 67108864 --resources '{\"tiny\": 1}' "
                                              "--object-spilling-directory " +
                                              tiny_spill.string()}
                   : std::vector<std::string>{}};
  ~SpillCluster() {
    if (tiny_mounted) ::umount(tiny_spill.c_str());
    std::filesystem::remove_all(head_spill);
    std::filesystem::remove_all(tiny_spill);
  }
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
  CHECK(FilesIn(c.head_spill) > 0);
  CHECK(OnDiskOnly(c.cluster, small.ID()));
  if (c.tiny_mounted) CHECK(*orb::Task(Checksum).SetResource("tiny", 1).Remote(small).Get(60000) == 42ll * (16 << 20));
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
  CHECK(orb::testing::WaitFor([&] { return FilesIn(c.head_spill) == 0; }, std::chrono::seconds(20)));
}

TEST_CASE("spilling to a full disk is OutOfDiskError for the caller; the raylet keeps serving", "[spill]") {
  auto& c = Cluster();
  if (!c.tiny_mounted) {
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
