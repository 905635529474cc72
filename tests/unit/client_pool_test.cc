#include <catch2/catch.hpp>
#include <thread>

#include "common/client_pool.h"
#include "gossip.grpc.pb.h"

using namespace orb;

TEST_CASE("a client pool drops clients idle past their time that no caller holds", "[rpc]") {
  ClientPool<rpc::GossipService> pool("token", std::chrono::milliseconds(50));
  auto held = pool.Get("127.0.0.1:1");
  pool.Get("127.0.0.1:2");  // used once, let go
  CHECK(pool.Get("127.0.0.1:2") == pool.Get("127.0.0.1:2"));  // reused while fresh
  CHECK(pool.size() == 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  pool.Get("127.0.0.1:3");  // a later use sweeps
  CHECK(pool.size() == 2);  // :1 is held, :2 went, :3 is new
  CHECK(pool.Get("127.0.0.1:1") == held);
}
