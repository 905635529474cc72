#include "collective/shared_memory_group.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <fstream>
#include <new>
#include <random>
#include <sstream>

#include "collective/collective_group.h"
#include "collective/tensor_ops.h"

namespace orb::collective {
namespace {

constexpr uint64_t kMagic = 0x316c6f632d62726fULL;  // "orb-col1"
constexpr size_t kLine = 64;
// Rounds of more data than this, among more than two members, reduce in parts (below).
constexpr size_t kSplitBytes = 64 << 10;

// The segment: a Header, one MemberState per member, then two slots per member, each a
// Call padded to a line followed by the slot's data.
struct alignas(kLine) Header {
  uint64_t magic;
  uint64_t size;                   // members
  uint64_t slot_payload;           // data bytes per slot
  std::atomic<uint32_t> events;    // bumped on every publish and leave; the futex word
  std::atomic<uint32_t> sleepers;  // members asleep on `events`
};
struct alignas(kLine) MemberState {
  std::atomic<uint64_t> published;  // the last step this member has finished
  std::atomic<uint32_t> left;       // 1 once the member has left the group
  int32_t pid;
  uint64_t start_time;  // of `pid`, in ticks since boot: tells a reused pid apart
};
static_assert(sizeof(Header) == kLine && sizeof(MemberState) == kLine);
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free);

// Slots hold up to 1 MiB of data each, less in large groups (the segment stays near
// 16 MiB), at least 64 KiB.
size_t SlotPayloadFor(int size) {
  size_t payload = (size_t{16} << 20) / (2 * static_cast<size_t>(size));
  payload = std::clamp(payload, size_t{64} << 10, size_t{1} << 20);
  return payload & ~(kLine - 1);
}
size_t SegmentBytes(int size, size_t payload) {
  return kLine * (1 + static_cast<size_t>(size)) + (kLine + payload) * 2 * static_cast<size_t>(size);
}
Header* HeaderOf(char* base) { return reinterpret_cast<Header*>(base); }
MemberState* MemberOf(char* base, int rank) { return reinterpret_cast<MemberState*>(base + kLine * (1 + rank)); }
char* SlotOf(char* base, int rank, uint64_t round) {
  Header* h = HeaderOf(base);
  return base + kLine * (1 + h->size) + (kLine + h->slot_payload) * (2 * static_cast<size_t>(rank) + (round & 1));
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

void FutexWait(std::atomic<uint32_t>* word, uint32_t seen, std::chrono::microseconds timeout) {
  timespec ts{static_cast<time_t>(timeout.count() / 1000000), static_cast<long>(timeout.count() % 1000000) * 1000};
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}
void FutexWakeAll(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// When `pid` started, in clock ticks since boot; 0 when it is gone or a zombie.
uint64_t StartTimeOf(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 > stat.size()) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string state, skip;
  fields >> state;  // field 3
  if (state == "Z" || state == "X") return 0;
  for (int field = 4; field < 22; ++field) fields >> skip;
  uint64_t start = 0;
  fields >> start;  // field 22
  return start;
}

// What two processes must share to use one segment: the boot (a UUID, as two halves),
// and the pid, IPC and mount namespaces (the same pids, the same /dev/shm). Empty when
// unknown.
std::vector<int64_t> MachineKey() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string boot;
  in >> boot;
  boot.erase(std::remove(boot.begin(), boot.end(), '-'), boot.end());
  if (boot.size() != 32) return {};
  std::vector<int64_t> key;
  try {
    key.push_back(static_cast<int64_t>(std::stoull(boot.substr(0, 16), nullptr, 16)));
    key.push_back(static_cast<int64_t>(std::stoull(boot.substr(16), nullptr, 16)));
  } catch (const std::exception&) {
    return {};
  }
  for (const char* ns : {"pid", "ipc", "mnt"}) {
    struct stat st;
    if (::stat((std::string("/proc/self/ns/") + ns).c_str(), &st) != 0) return {};
    key.push_back(static_cast<int64_t>(st.st_ino));
  }
  return key;
}
constexpr size_t kMachineKeyLength = 5;

// A new segment, its pages reserved now (a full /dev/shm fails here, not with SIGBUS
// later), header written. Null on failure.
char* CreateSegment(const std::string& shm_name, int size, size_t payload) {
  size_t bytes = SegmentBytes(size, payload);
  int fd = ::shm_open(shm_name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return nullptr;
  void* p = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) == 0 && ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)) == 0) {
    p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  ::close(fd);
  if (p == MAP_FAILED) {
    ::shm_unlink(shm_name.c_str());
    return nullptr;
  }
  char* base = static_cast<char*>(p);
  Header* h = new (base) Header{};
  h->size = static_cast<uint64_t>(size);
  h->slot_payload = payload;
  for (int r = 0; r < size; ++r) new (MemberOf(base, r)) MemberState{};
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kMagic;
  return base;
}

// Maps a segment another member made; null unless it is one for `size` members.
char* OpenSegment(const std::string& shm_name, int size, size_t* bytes) {
  int fd = ::shm_open(shm_name.c_str(), O_RDWR, 0);
  if (fd < 0) return nullptr;
  struct stat st;
  void* p = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= sizeof(Header)) {
    *bytes = static_cast<size_t>(st.st_size);
    p = ::mmap(nullptr, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  ::close(fd);
  if (p == MAP_FAILED) return nullptr;
  char* base = static_cast<char*>(p);
  Header* h = HeaderOf(base);
  if (h->magic != kMagic || h->size != static_cast<uint64_t>(size) || SegmentBytes(size, h->slot_payload) != *bytes) {
    ::munmap(base, *bytes);
    return nullptr;
  }
  return base;
}

std::string RandomSegmentName() {
  std::random_device random;
  std::ostringstream name;
  name << "/orb-col-" << std::hex << ((static_cast<uint64_t>(random()) << 32) | random());
  return name.str();
}

// Calls body(offset, n) for `count` elements split into rounds of at most `per_round`;
// at least once, since a call on nothing still meets the other members.
template <class Body>
void ForEachRound(size_t count, size_t per_round, Body body) {
  size_t offset = 0;
  do {
    size_t n = std::min(per_round, count - offset);
    body(offset, n);
    offset += n;
  } while (offset < count);
}

}  // namespace

std::unique_ptr<SharedMemoryGroup> SharedMemoryGroup::Connect(const std::string& name, int rank, int size,
                                                              bool wanted, std::chrono::milliseconds timeout,
                                                              const Exchange& exchange) {
  // 1. Does every member want it, on the same machine?
  std::vector<int64_t> mine(1 + kMachineKeyLength, 0);
  std::vector<int64_t> key = wanted ? MachineKey() : std::vector<int64_t>{};
  if (key.size() == kMachineKeyLength) {
    mine[0] = 1;
    std::copy(key.begin(), key.end(), mine.begin() + 1);
  }
  std::vector<int64_t> all = exchange(mine);
  for (int r = 0; r < size; ++r) {
    if (!std::equal(mine.begin(), mine.end(), all.begin() + r * static_cast<long>(mine.size())) || mine[0] != 1) {
      return nullptr;
    }
  }
  // 2. Rank 0 makes the segment and tells the others its name; they map it.
  std::string shm_name;
  char* base = nullptr;
  size_t bytes = 0;
  std::vector<int64_t> offer(5, 0);  // made?, then the name (at most 32 bytes)
  if (rank == 0) {
    shm_name = RandomSegmentName();
    size_t payload = SlotPayloadFor(size);
    base = CreateSegment(shm_name, size, payload);
    bytes = SegmentBytes(size, payload);
    if (base) {
      offer[0] = 1;
      std::memcpy(&offer[1], shm_name.data(), std::min(shm_name.size(), size_t{32}));
    }
  }
  std::vector<int64_t> offers = exchange(offer);
  if (offers[0] != 1) return nullptr;
  if (rank != 0) {
    const char* text = reinterpret_cast<const char*>(&offers[1]);
    shm_name.assign(text, ::strnlen(text, 32));
    base = OpenSegment(shm_name, size, &bytes);
  }
  if (base) {
    MemberState* me = MemberOf(base, rank);
    me->pid = static_cast<int32_t>(::getpid());
    me->start_time = StartTimeOf(::getpid());
  }
  // 3. Everyone mapped it (and said who it is) or nobody uses it. Either way the name
  // goes now, so no segment outlives the group's members, even killed ones.
  std::vector<int64_t> oks = exchange({base ? 1 : 0});
  if (rank == 0) ::shm_unlink(shm_name.c_str());
  bool all_mapped = std::all_of(oks.begin(), oks.end(), [](int64_t ok) { return ok == 1; });
  if (!all_mapped) {
    if (base) ::munmap(base, bytes);
    return nullptr;
  }
  return std::unique_ptr<SharedMemoryGroup>(new SharedMemoryGroup(name, rank, size, timeout, base, bytes));
}

SharedMemoryGroup::SharedMemoryGroup(std::string name, int rank, int size, std::chrono::milliseconds timeout,
                                     char* base, size_t bytes)
    : name_(std::move(name)), rank_(rank), size_(size), timeout_(timeout), base_(base), bytes_(bytes) {}

SharedMemoryGroup::~SharedMemoryGroup() {
  MemberOf(base_, rank_)->left.store(1, std::memory_order_release);
  Header* h = HeaderOf(base_);
  h->events.fetch_add(1);
  if (h->sleepers.load() > 0) FutexWakeAll(&h->events);
  ::munmap(base_, bytes_);
}

const char* SharedMemoryGroup::Slot(int rank) const { return SlotOf(base_, rank, round_) + kLine; }

size_t SharedMemoryGroup::ElementsPerRound(DType dtype) const {
  return HeaderOf(base_)->slot_payload / DTypeSize(dtype);
}

void SharedMemoryGroup::Fail(const Call& call, const std::string& why) {
  broken_ = why;
  throw CollectiveError(std::string(KindName(call.kind)) + " on collective group '" + name_ + "' failed: " + why);
}

void SharedMemoryGroup::Round(const Call& call, const void* data, size_t bytes) {
  if (!broken_.empty()) {
    throw CollectiveError(std::string(KindName(call.kind)) + " on collective group '" + name_ +
                          "': the group failed earlier (" + broken_ + "); destroy it and make it again");
  }
  // This round's slot was last read in the round before last; a member that has written
  // the last round is done with it.
  WaitForAll(last_write_step_, call);
  ++round_;
  char* slot = SlotOf(base_, rank_, round_);
  std::memcpy(slot, &call, sizeof(call));
  if (bytes > 0) std::memcpy(slot + kLine, data, bytes);
  Step(call);
  last_write_step_ = step_;
  CheckSameCall(name_, rank_, size_, [this](int r) { return SlotOf(base_, r, round_); });
}

void SharedMemoryGroup::Step(const Call& call) {
  ++step_;
  Header* h = HeaderOf(base_);
  MemberOf(base_, rank_)->published.store(step_, std::memory_order_release);
  h->events.fetch_add(1);
  if (h->sleepers.load() > 0) FutexWakeAll(&h->events);
  WaitForAll(step_, call);
}

void SharedMemoryGroup::WaitForAll(uint64_t step, const Call& call) {
  // The first member not yet past `step`, or -1; a member that left fails the wait.
  auto first_late = [&]() -> int {
    for (int r = 0; r < size_; ++r) {
      MemberState* m = MemberOf(base_, r);
      if (m->published.load(std::memory_order_acquire) >= step) continue;
      if (m->left.load(std::memory_order_acquire)) Fail(call, "rank " + std::to_string(r) + " left the group");
      return r;
    }
    return -1;
  };
  if (first_late() < 0) return;
  constexpr auto kSpin = std::chrono::microseconds(2);
  constexpr auto kYield = std::chrono::microseconds(500);
  constexpr auto kLivenessEvery = std::chrono::milliseconds(10);
  Header* h = HeaderOf(base_);
  auto start = std::chrono::steady_clock::now();
  auto next_liveness_check = start + kLivenessEvery;
  for (int late = first_late(); late >= 0; late = first_late()) {
    auto now = std::chrono::steady_clock::now();
    if (now - start < kSpin) {
      CpuRelax();
      continue;
    }
    if (now >= next_liveness_check) {
      next_liveness_check = now + kLivenessEvery;
      for (int r = 0; r < size_; ++r) {
        MemberState* m = MemberOf(base_, r);
        if (m->published.load(std::memory_order_acquire) >= step) continue;
        if (StartTimeOf(m->pid) != m->start_time) {
          Fail(call, "rank " + std::to_string(r) + " (pid " + std::to_string(m->pid) + ") died");
        }
      }
    }
    if (now - start >= timeout_) {
      Fail(call, "rank " + std::to_string(late) + " did not make the call within " + std::to_string(timeout_.count()) +
                     " ms");
    }
    if (now - start < kYield) {
      ::sched_yield();
      continue;
    }
    uint32_t seen = h->events.load();
    h->sleepers.fetch_add(1);
    if (first_late() >= 0) FutexWait(&h->events, seen, std::chrono::milliseconds(5));
    h->sleepers.fetch_sub(1);
  }
}

void SharedMemoryGroup::CombineSlots(ReduceFn reduce, char* out, size_t skip, size_t n) const {
  CombineInRankOrder(reduce, out, size_, [&](int r) { return Slot(r) + skip; }, n);
}

void SharedMemoryGroup::ReduceTo(const Call& call, const Tensor& t, ReduceOp op, int root) {
  size_t width = DTypeSize(t.dtype);
  ReduceFn reduce = ReduceFunction(t.dtype, op);
  ForEachRound(t.count, ElementsPerRound(t.dtype), [&](size_t offset, size_t n) {
    char* mine = static_cast<char*>(t.data) + offset * width;
    Round(call, mine, n * width);
    bool keeps_result = root < 0 || root == rank_;
    if (n == 0) return;
    if (size_ == 2 || n * width < kSplitBytes) {
      if (keeps_result) CombineSlots(reduce, mine, 0, n);
      return;
    }
    // Member p reduces part p of every slot into part p of its own slot (nobody else
    // reads that part of it), then everyone copies the parts: each member touches about
    // three times the data instead of world_size + 1 times.
    auto part = [&](int p) {
      return std::make_pair(n * static_cast<size_t>(p) / static_cast<size_t>(size_),
                            n * static_cast<size_t>(p + 1) / static_cast<size_t>(size_));
    };
    auto [from, to] = part(rank_);
    char* own = SlotOf(base_, rank_, round_) + kLine + from * width;
    for (int r = 0; r < size_ && to > from; ++r) {
      if (r != rank_) reduce(own, own, Slot(r) + from * width, to - from);
    }
    Step(call);
    for (int p = 0; p < size_ && keeps_result; ++p) {
      auto [lo, hi] = part(p);
      std::memcpy(mine + lo * width, Slot(p) + lo * width, (hi - lo) * width);
    }
  });
}

void SharedMemoryGroup::AllReduce(const Tensor& t, ReduceOp op) {
  ReduceTo(Call::Of(Call::kAllReduce, t), t, op, /*root=*/-1);
}

void SharedMemoryGroup::Reduce(const Tensor& t, int root, ReduceOp op) {
  ReduceTo(Call::Of(Call::kReduce, t, root), t, op, root);
}

void SharedMemoryGroup::Broadcast(const Tensor& t, int root) {
  Call call = Call::Of(Call::kBroadcast, t, root);
  size_t width = DTypeSize(t.dtype);
  ForEachRound(t.count, ElementsPerRound(t.dtype), [&](size_t offset, size_t n) {
    char* mine = static_cast<char*>(t.data) + offset * width;
    bool sending = rank_ == root;
    Round(call, sending ? mine : nullptr, sending ? n * width : 0);
    if (!sending && n > 0) std::memcpy(mine, Slot(root), n * width);
  });
}

void SharedMemoryGroup::AllGather(const Tensor& in, const Tensor& out) {
  Call call = Call::Of(Call::kAllGather, in);
  size_t width = DTypeSize(in.dtype);
  ForEachRound(in.count, ElementsPerRound(in.dtype), [&](size_t offset, size_t n) {
    Round(call, static_cast<const char*>(in.data) + offset * width, n * width);
    for (int r = 0; r < size_ && n > 0; ++r) {
      std::memcpy(static_cast<char*>(out.data) + (static_cast<size_t>(r) * in.count + offset) * width, Slot(r),
                  n * width);
    }
  });
}

void SharedMemoryGroup::ReduceScatter(const Tensor& in, const Tensor& out, ReduceOp op) {
  Call call = Call::Of(Call::kReduceScatter, in);
  size_t width = DTypeSize(in.dtype);
  ReduceFn reduce = ReduceFunction(in.dtype, op);
  size_t first = static_cast<size_t>(rank_) * out.count;  // this member's slice of the input
  size_t last = first + out.count;
  ForEachRound(in.count, ElementsPerRound(in.dtype), [&](size_t offset, size_t n) {
    Round(call, static_cast<const char*>(in.data) + offset * width, n * width);
    size_t from = std::max(offset, first);
    size_t to = std::min(offset + n, last);
    if (from < to) {
      CombineSlots(reduce, static_cast<char*>(out.data) + (from - first) * width, (from - offset) * width, to - from);
    }
  });
}

void SharedMemoryGroup::Barrier() { Round(Call::Of(Call::kBarrier, Tensor{}), nullptr, 0); }

}  // namespace orb::collective
