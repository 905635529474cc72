// orb_object_benchmark: what the object protocols cost, one JSON line per metric.
//
//   orb_object_benchmark            # an embedded cluster with a 256 MiB store
//   orb_object_benchmark --quick    # fewer iterations, a smaller working set
//
// - The reference protocol: tasks that take a ref inside a value (the worker becomes a
//   borrower and registers with the owner) beside plain tasks and tasks that take the ref
//   as an argument, in the same run.
// - Spilling: Puts of a working set four times the store (so most of it goes to disk),
//   then Gets of all of it (restores), beside a raw write and read of a file of the same
//   size in the same directory, measured in the same run, and the speed of the checksum
//   (XXH3-64 per 8 MiB piece) every spilled object carries: what share of a restore's
//   time it would cost on one thread (a restore reads and checks a large object's
//   pieces on several threads).
#include <fcntl.h>
#include <orb/api.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "bench_report.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace {

int Noop(int x) { return x; }
int TakeRef(int x, orb::ObjectRef<int> ref) { return x + static_cast<int>(ref.ID().size() > 0); }
int BorrowRef(int x, std::vector<orb::ObjectRef<int>> refs) { return x + static_cast<int>(refs.size()); }
ORB_REMOTE(Noop, TakeRef, BorrowRef);

using bench::Report;
using bench::Seconds;

// Writes `bytes` to a new file in `dir` as the spiller does (large pwrites, then
// fdatasync), then reads it back; seconds for each.
std::pair<double, double> RawFileSeconds(const std::string& dir, size_t bytes) {
  std::string path = dir + "/raw-disk-benchmark.bin";
  std::vector<char> block(64 << 20, 3);
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0600);
  if (fd < 0) return {0, 0};
  double write = Seconds([&] {
    for (size_t off = 0; off < bytes; off += block.size()) {
      if (::pwrite(fd, block.data(), block.size(), static_cast<off_t>(off)) < 0) break;
    }
    ::fdatasync(fd);
  });
  double read = Seconds([&] {
    for (size_t off = 0; off < bytes; off += block.size()) {
      if (::pread(fd, block.data(), block.size(), static_cast<off_t>(off)) < 0) break;
    }
  });
  ::close(fd);
  ::unlink(path.c_str());
  return {write, read};
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) quick = quick || std::strcmp(argv[i], "--quick") == 0;
  orb::Config config;
  config.object_store_memory = 256ll << 20;
  orb::Init(config, argc, argv);
  // The embedded raylet spills to <session>/spill under the temp root: the raw figures
  // are measured in that root, on the same file system.
  const char* root_env = std::getenv("ORB_TEMP_DIR");
  std::string root = root_env && *root_env ? root_env : "/tmp/orb-" + std::to_string(::getuid());
  orb::Get(std::vector<orb::ObjectRef<int>>{orb::Task(Noop).Remote(0), orb::Task(Noop).Remote(1)});  // warm up

  // --- The reference protocol ---
  int n = quick ? 2000 : 20000;
  auto shared = orb::Put(7);
  double plain = Seconds([&] {
    std::vector<orb::ObjectRef<int>> refs;
    for (int i = 0; i < n; ++i) refs.push_back(orb::Task(Noop).Remote(i));
    orb::Get(refs);
  });
  Report("single_client_tasks_async", n / plain, "tasks/s", plain);
  double by_ref = Seconds([&] {
    std::vector<orb::ObjectRef<int>> refs;
    for (int i = 0; i < n; ++i) refs.push_back(orb::Task(TakeRef).Remote(i, shared));
    orb::Get(refs);
  });
  Report("ref_argument_tasks_async", n / by_ref, "tasks/s", by_ref);
  double borrowed = Seconds([&] {
    std::vector<orb::ObjectRef<int>> refs;
    for (int i = 0; i < n; ++i) refs.push_back(orb::Task(BorrowRef).Remote(i, std::vector<orb::ObjectRef<int>>{shared}));
    orb::Get(refs);
  });
  Report("borrowed_ref_tasks_async", n / borrowed, "tasks/s", borrowed);
  Report("borrowed_ref_task_cost_ratio", borrowed / plain, "x plain", 0);

  // --- Spilling ---
  const size_t block = 64 << 20;
  int blocks = quick ? 8 : 16;  // 512 MiB or 1 GiB through a 256 MiB store
  double gigabytes = static_cast<double>(block) * blocks / 1e9;
  std::vector<orb::ObjectRef<std::vector<uint8_t>>> refs;
  std::vector<uint8_t> payload(block);
  double put = Seconds([&] {
    for (int i = 0; i < blocks; ++i) {
      std::memset(payload.data(), i, 64);
      refs.push_back(orb::Put(payload));
    }
  });
  Report("spill_put_gigabytes", gigabytes / put, "GB/s", put);
  size_t checked = 0;
  double get = Seconds([&] {
    for (int i = 0; i < blocks; ++i) checked += (*orb::Get(refs[i]))[0] == static_cast<uint8_t>(i);
  });
  Report("restore_get_gigabytes", gigabytes / get, "GB/s", get);
  if (checked != static_cast<size_t>(blocks)) std::cerr << "object_benchmark: a restored value was wrong\n";
  refs.clear();
  auto [write, read] = RawFileSeconds(root, block * blocks);
  if (write > 0) Report("raw_disk_write_gigabytes", gigabytes / write, "GB/s", write);
  if (read > 0) Report("raw_disk_read_gigabytes", gigabytes / read, "GB/s", read);
  // The checksum a spill computes and a restore checks, over the same bytes.
  volatile uint64_t sum = 0;  // kept, so the checksums are computed
  double checksum = Seconds([&] {
    for (int i = 0; i < blocks; ++i) sum = sum ^ XXH3_64bits(payload.data(), payload.size());
  });
  Report("spill_checksum_gigabytes", gigabytes / checksum, "GB/s", checksum);
  Report("restore_checksum_share", checksum / get, "of restore_get time", 0);
  orb::Shutdown();
  return checked == static_cast<size_t>(blocks) ? 0 : 1;
}
