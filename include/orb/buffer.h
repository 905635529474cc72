// orb::Buffer: bytes that Get hands back without copying them.
//
//   std::vector<uint8_t> bytes = ...;
//   orb::ObjectRef<orb::Buffer> ref = orb::Put(orb::Buffer(std::move(bytes)));
//   std::shared_ptr<orb::Buffer> view = orb::Get(ref);   // no copy: a view of the store
//   Consume(view->data(), view->size());
//
// A Buffer from Get points into the node's shared-memory object store, where the
// object stays pinned (it is neither evicted nor spilled) while the Buffer or any copy
// of it lives; a value that came from another node is pulled into this node's store
// first and viewed there. A Buffer made in the program owns its bytes. Either way it is
// immutable and cheap to copy (copies share the bytes).
//
// On the wire a Buffer is a msgpack byte string, as std::vector<uint8_t> is: a Buffer
// can be read as a std::vector<uint8_t> and the other way round, and Python sees bytes.
// As a task argument it is copied once (into the task's own Buffer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST
#endif
#include <msgpack.hpp>

namespace orb {

class Buffer {
 public:
  Buffer() = default;
  // Takes the bytes over (no copy when moved in). Implicit, so that a byte vector can
  // be passed where a Buffer parameter is.
  Buffer(std::vector<uint8_t> bytes) {  // NOLINT(google-explicit-constructor)
    auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    data_ = owned->data();
    size_ = owned->size();
    keeper_ = std::move(owned);
  }
  // Copies `size` bytes from `data`.
  Buffer(const void* data, size_t size)
      : Buffer(std::vector<uint8_t>(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size)) {}
  // A view of `size` bytes at `data`, valid while `keeper` lives (for the runtime).
  Buffer(std::shared_ptr<const void> keeper, const uint8_t* data, size_t size)
      : keeper_(std::move(keeper)), data_(data), size_(size) {}

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const uint8_t* begin() const { return data_; }
  const uint8_t* end() const { return data_ + size_; }
  uint8_t operator[](size_t i) const { return data_[i]; }
  std::vector<uint8_t> ToVector() const { return std::vector<uint8_t>(begin(), end()); }

 private:
  std::shared_ptr<const void> keeper_;  // the owned bytes, or what pins them in the store
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace orb

namespace msgpack {
MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS) {
namespace adaptor {

template <>
struct pack<orb::Buffer> {
  template <class Stream>
  packer<Stream>& operator()(packer<Stream>& out, const orb::Buffer& b) const {
    if (b.size() > 0xffffffffu) throw msgpack::container_size_overflow("orb::Buffer larger than 4 GiB");
    out.pack_bin(static_cast<uint32_t>(b.size()));
    out.pack_bin_body(reinterpret_cast<const char*>(b.data()), static_cast<uint32_t>(b.size()));
    return out;
  }
};

template <>
struct convert<orb::Buffer> {
  const msgpack::object& operator()(const msgpack::object& o, orb::Buffer& b) const {
    if (o.type == msgpack::type::BIN) {
      b = orb::Buffer(o.via.bin.ptr, o.via.bin.size);
    } else if (o.type == msgpack::type::STR) {
      b = orb::Buffer(o.via.str.ptr, o.via.str.size);
    } else {
      throw msgpack::type_error();
    }
    return o;
  }
};

}  // namespace adaptor
}  // MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS)
}  // namespace msgpack
