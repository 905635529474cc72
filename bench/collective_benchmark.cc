// orb_collective_benchmark: AllReduce (float32, sum) of 1 KiB, 1 MiB and 64 MiB among
// 2 and 4 actors on this machine, in the same run:
//   orb      - orb's collective API as it runs by default (shared memory on one machine)
//   orb_tcp  - orb over TCP, as across machines (ORB_COLLECTIVE_SHM=0 for that group)
//   raw_gloo - Gloo alone, on contexts of its own: the older ring algorithm (built
//              once) up to 64 KiB, gloo::allreduce above (the choice orb's TCP path makes)
// One JSON line per (ranks, size): time per call (the median of 7 blocks of calls, the
// three taking turns) and algorithm bandwidth (bytes / time).
//
//   orb_collective_benchmark [--orb-address=H:P] [--quick]
#include <orb/api.h>
#include <unistd.h>

#include <gloo/allreduce.h>
#include <gloo/allreduce_ring.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace col = orb::collective;

class Bencher {
 public:
  static Bencher* Create() { return new Bencher(); }
  bool Join(std::string group, int size, int rank, std::string store_dir) {
    col::InitGroup(group, size, rank, col::Backend::GLOO, std::chrono::seconds(120));
    ::setenv("ORB_COLLECTIVE_SHM", "0", 1);
    col::InitGroup(group + "-tcp", size, rank, col::Backend::GLOO, std::chrono::seconds(120));
    ::unsetenv("ORB_COLLECTIVE_SHM");
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto device = gloo::transport::tcp::CreateDevice(attr);
    // Gloo's two APIs must not share a context.
    for (auto* context : {&raw_, &raw_ring_}) {
      gloo::rendezvous::FileStore store(store_dir + (context == &raw_ ? "/new" : "/ring"));
      *context = std::make_shared<gloo::rendezvous::Context>(rank, size);
      (*context)->setTimeout(std::chrono::seconds(120));
      (*context)->connectFullMesh(store, device);
    }
    return true;
  }
  // Seconds per AllReduce of `count` floats over `iters` calls (after one warm-up).
  double Orb(std::string group, int count, int iters) {
    std::vector<float> v(count, 1.0f);
    col::AllReduce(col::View(v), group);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) col::AllReduce(col::View(v), group);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
  }
  double Raw(int count, int iters) {
    std::vector<float> v(count, 1.0f);
    // The ring algorithm is built once and run again, as a careful Gloo user would.
    std::unique_ptr<gloo::AllreduceRing<float>> ring;
    if (count * sizeof(float) <= (64 << 10)) ring = std::make_unique<gloo::AllreduceRing<float>>(raw_ring_, std::vector<float*>{v.data()}, count);
    auto once = [&] {
      if (ring) return ring->run();
      gloo::AllreduceOptions opts(raw_);
      opts.setOutput(v.data(), v.size());
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      gloo::allreduce(opts);
    };
    once();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) once();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
  }

 private:
  std::shared_ptr<gloo::rendezvous::Context> raw_;
  std::shared_ptr<gloo::rendezvous::Context> raw_ring_;
};
ORB_REMOTE(Bencher::Create, &Bencher::Join, &Bencher::Orb, &Bencher::Raw);

namespace {

template <class F>
double Slowest(const std::vector<orb::ActorHandle<Bencher>>& members, F call) {
  std::vector<orb::ObjectRef<double>> refs;
  for (size_t r = 0; r < members.size(); ++r) refs.push_back(call(members[r]));
  double slowest = 0;
  for (const auto& t : orb::Get(refs)) slowest = std::max(slowest, *t);
  return slowest;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) quick = quick || std::strcmp(argv[i], "--quick") == 0;
  orb::Init(argc, argv);
  for (int ranks : {2, 4}) {
    std::string group = "bench-" + std::to_string(ranks);
    auto store = std::filesystem::temp_directory_path() / ("orb-gloo-bench-" + std::to_string(::getpid()) + "-" + group);
    std::filesystem::create_directories(store / "new");
    std::filesystem::create_directories(store / "ring");
    std::vector<orb::ActorHandle<Bencher>> members;
    for (int r = 0; r < ranks; ++r) members.push_back(orb::Actor(Bencher::Create).Remote());
    std::vector<orb::ObjectRef<bool>> joined;
    for (int r = 0; r < ranks; ++r) joined.push_back(members[r].Task(&Bencher::Join).Remote(group, ranks, r, store.string()));
    orb::Get(joined);
    // Blocks of calls take turns (orb, raw, orb over TCP) and each column reports its
    // median block: this machine's noise moves single runs by 2x.
    for (auto [bytes, iters] : std::vector<std::pair<int, int>>{{1 << 10, 200}, {1 << 20, 10}, {64 << 20, 1}}) {
      int blocks = quick ? 1 : 7;
      if (quick) iters = std::max(1, iters / 10);
      int count = bytes / 4;
      std::vector<double> orb_s, raw_s, tcp_s;
      for (int b = 0; b < blocks; ++b) {
        orb_s.push_back(Slowest(members, [&](auto& m) { return m.Task(&Bencher::Orb).Remote(group, count, iters); }));
        raw_s.push_back(Slowest(members, [&](auto& m) { return m.Task(&Bencher::Raw).Remote(count, iters); }));
        tcp_s.push_back(
            Slowest(members, [&](auto& m) { return m.Task(&Bencher::Orb).Remote(group + "-tcp", count, iters); }));
      }
      double orb = Median(orb_s), raw = Median(raw_s), tcp = Median(tcp_s);
      std::cout << "{\"metric\": \"allreduce_float32\", \"ranks\": " << ranks << ", \"bytes\": " << bytes
                << ", \"orb_us\": " << orb * 1e6 << ", \"orb_tcp_us\": " << tcp * 1e6
                << ", \"raw_gloo_us\": " << raw * 1e6 << ", \"orb_algbw_gbps\": " << bytes / orb / 1e9
                << ", \"orb_tcp_algbw_gbps\": " << bytes / tcp / 1e9
                << ", \"raw_gloo_algbw_gbps\": " << bytes / raw / 1e9 << "}" << std::endl;
    }
    for (auto& m : members) m.Kill();
    std::filesystem::remove_all(store);
  }
  orb::Shutdown();
  return 0;
}
