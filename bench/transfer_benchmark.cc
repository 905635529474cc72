// orb_transfer_benchmark: cross-node object transfer, beside a raw TCP loopback copy of
// the same size measured in the same run. One JSON line per (metric, size).
//
//   orb_transfer_benchmark                     # starts a 2-node cluster with the orb CLI
//   orb_transfer_benchmark --orb-address=H:P   # a running cluster with at least 2 nodes
//
// The object is made by a task on one node and read (Get) by the driver on another: the
// time covers the pull (8 MiB ranges over the object stream, 4 in flight) and the copy
// into the vector. object_get_local_gigabytes reads an object made on the driver's own
// node the same way: the Get without the transfer. The *_view_* metrics do the same with
// an orb::Buffer, which Get returns as a view of the store (no copy into a vector).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <orb/api.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>
#include <vector>

namespace {

std::vector<uint8_t> Produce(int64_t bytes, int seed) { return std::vector<uint8_t>(bytes, static_cast<uint8_t>(seed)); }
orb::Buffer ProduceBuffer(int64_t bytes, int seed) { return Produce(bytes, seed); }
ORB_REMOTE(Produce, ProduceBuffer);

using Clock = std::chrono::steady_clock;

// Sends `bytes` over a loopback TCP connection and returns the receiver's seconds.
double RawTcpSeconds(size_t bytes) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  ::listen(listener, 1);
  std::vector<char> source(bytes, 1), sink(bytes);
  auto start = Clock::now();
  std::thread sender([&] {
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    size_t sent = 0;
    while (sent < bytes) {
      ssize_t n = ::send(s, source.data() + sent, std::min<size_t>(bytes - sent, 1 << 20), 0);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    ::close(s);
  });
  int conn = ::accept(listener, nullptr, nullptr);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::recv(conn, sink.data() + got, bytes - got, 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  sender.join();
  ::close(conn);
  ::close(listener);
  return seconds;
}

std::string Run(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), pipe)) out += buf;
  ::pclose(pipe);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string address;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--orb-address=", 14) == 0) address = argv[i] + 14;
  }
  std::string orb_cli = (std::filesystem::path(argv[0]).parent_path() / "orb").string();
  bool own_cluster = address.empty();
  if (own_cluster) {
    std::string store = std::to_string(2600ll << 20);
    std::string head = Run(orb_cli + " start --head --port 0 --num-cpus 2 --object-store-memory " + store);
    auto pos = head.find("GCS address:");
    if (pos == std::string::npos) {
      std::cerr << "cannot start a cluster: " << head << "\n";
      return 1;
    }
    address = head.substr(head.find_first_not_of(' ', pos + 12));
    address = address.substr(0, address.find('\n'));
    Run(orb_cli + " start --address " + address + " --num-cpus 2 --object-store-memory " + store);
  }
  orb::Config config;
  config.address = address;
  orb::Init(config);
  std::string self = orb::GetRuntimeContext().GetNodeId(), other;
  for (int attempt = 0; attempt < 100 && other.empty(); ++attempt) {
    for (const auto& n : orb::Nodes()) {
      if (n.alive && n.node_id != self) other = n.node_id;
    }
    if (other.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (other.empty()) {
    std::cerr << "the cluster needs a second node\n";
    return 1;
  }
  struct Size {
    const char* name;
    int64_t bytes;
    int reps;
  };
  for (Size size : {Size{"1MiB", 1ll << 20, 20}, Size{"64MiB", 64ll << 20, 5}, Size{"1GiB", 1ll << 30, 1}}) {
    // Seconds to Get `reps` objects made on `node` (made untimed, read here timed); a
    // negative result when a value came back wrong.
    auto time_gets = [&](const std::string& node, auto producer) {
      double seconds = 0;
      for (int r = 0; r < size.reps; ++r) {
        auto ref = orb::Task(producer)
                       .SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{node})
                       .Remote(size.bytes, r);
        orb::Wait(std::vector<decltype(ref)>{ref}, 1, -1);
        auto start = Clock::now();
        auto value = orb::Get(ref);
        seconds += std::chrono::duration<double>(Clock::now() - start).count();
        if (static_cast<int64_t>(value->size()) != size.bytes || (*value)[size.bytes - 1] != r) return -1.0;
      }
      return seconds;
    };
    double seconds = time_gets(other, Produce);
    double local = time_gets(self, Produce);  // the Get without a transfer
    // orb::Buffer: the Get is a view of the store (after the pull, for the other node).
    double view_seconds = time_gets(other, ProduceBuffer);
    double view_local = time_gets(self, ProduceBuffer);
    if (seconds < 0 || local < 0 || view_seconds < 0 || view_local < 0) return 2;
    double raw = 0;
    for (int r = 0; r < size.reps; ++r) raw += RawTcpSeconds(static_cast<size_t>(size.bytes));
    double gb = static_cast<double>(size.bytes) * size.reps / 1e9;
    std::cout << "{\"metric\": \"object_transfer_gigabytes\", \"size\": \"" << size.name << "\", \"value\": " << gb / seconds
              << ", \"unit\": \"GB/s\"}" << std::endl;
    std::cout << "{\"metric\": \"object_get_local_gigabytes\", \"size\": \"" << size.name
              << "\", \"value\": " << gb / local << ", \"unit\": \"GB/s\"}" << std::endl;
    std::cout << "{\"metric\": \"object_transfer_view_gigabytes\", \"size\": \"" << size.name
              << "\", \"value\": " << gb / view_seconds << ", \"unit\": \"GB/s\"}" << std::endl;
    std::cout << "{\"metric\": \"object_get_local_view_gigabytes\", \"size\": \"" << size.name
              << "\", \"value\": " << gb / view_local << ", \"unit\": \"GB/s\"}" << std::endl;
    std::cout << "{\"metric\": \"raw_tcp_loopback_gigabytes\", \"size\": \"" << size.name << "\", \"value\": " << gb / raw
              << ", \"unit\": \"GB/s\"}" << std::endl;
  }
  orb::Shutdown();
  if (own_cluster) Run(orb_cli + " stop > /dev/null");
  return 0;
}
