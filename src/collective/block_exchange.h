// Every member of a Gloo context sends one fixed-size block to every other member, in
// a single step — the agreement step of the TCP path, where a ring allgather would take
// world_size - 1 steps one after another.
//
// Built on Gloo's older buffer API: each member registers, with every peer, a receive
// buffer for that peer's block, twice (runs alternate between the two sets). A member
// can only start run k + 2, which overwrites what it sent in run k, after it has
// received every peer's run k + 1 — which a peer sends only once it is done with run k.
//
// Every member must construct its BlockExchange at the same point of its calls on the
// context (construction takes slots). Not thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace gloo {
class Context;
namespace transport {
class Buffer;
}
}  // namespace gloo

namespace orb::collective {

class BlockExchange {
 public:
  BlockExchange(const std::shared_ptr<gloo::Context>& context, size_t block_bytes);
  ~BlockExchange();

  // Sends `mine` (block_bytes) to every member and returns every member's block, in
  // rank order. Valid until the next Run. Throws what Gloo throws (a peer is gone, the
  // context's timeout passed).
  const char* Run(const void* mine);

 private:
  struct Set {
    std::vector<char> blocks;  // world_size blocks; this member's is the one it sends
    std::vector<std::unique_ptr<gloo::transport::Buffer>> sends, recvs;  // per peer
  };

  const int rank_;
  const int size_;
  const size_t block_bytes_;
  Set sets_[2];
  uint64_t runs_ = 0;
};

}  // namespace orb::collective
