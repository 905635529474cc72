#include "collective/block_exchange.h"

#include <gloo/context.h>
#include <gloo/transport/buffer.h>
#include <gloo/transport/pair.h>

#include <cstring>

namespace orb::collective {

BlockExchange::BlockExchange(const std::shared_ptr<gloo::Context>& context, size_t block_bytes)
    : rank_(context->rank), size_(context->size), block_bytes_(block_bytes) {
  int first_slot = context->nextSlot(2);
  for (int parity = 0; parity < 2; ++parity) {
    Set& set = sets_[parity];
    set.blocks.resize(block_bytes * static_cast<size_t>(size_));
    char* own = set.blocks.data() + block_bytes * static_cast<size_t>(rank_);
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      auto& pair = context->getPair(peer);
      set.sends.push_back(pair->createSendBuffer(first_slot + parity, own, block_bytes));
      set.recvs.push_back(pair->createRecvBuffer(
          first_slot + parity, set.blocks.data() + block_bytes * static_cast<size_t>(peer), block_bytes));
    }
  }
}

BlockExchange::~BlockExchange() = default;

const char* BlockExchange::Run(const void* mine) {
  Set& set = sets_[runs_++ & 1];
  std::memcpy(set.blocks.data() + block_bytes_ * static_cast<size_t>(rank_), mine, block_bytes_);
  for (auto& send : set.sends) send->send(0, block_bytes_);
  for (auto& recv : set.recvs) recv->waitRecv();
  for (auto& send : set.sends) send->waitSend();
  return set.blocks.data();
}

}  // namespace orb::collective
