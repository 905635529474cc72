// Serialization of user values with msgpack (readable from C++ and Python alike).
// Anything msgpack can pack works: numbers, strings, vectors, maps, tuples, and
// structs with MSGPACK_DEFINE.
#pragma once

#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST
#endif
#include <msgpack.hpp>
#include <cstring>
#include <string>

#include "orb/errors.h"

namespace orb::internal {

template <class T>
std::string Serialize(const T& value) {
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, value);
  return std::string(buffer.data(), buffer.size());
}

// msgpack streams that count bytes, and that write them straight to a destination:
// together they let Put serialize a large value once, into its final place.
struct SizeCounter {
  size_t size = 0;
  void write(const char*, size_t n) { size += n; }
};
struct RawWriter {
  char* out;
  void write(const char* data, size_t n) {
    std::memcpy(out, data, n);
    out += n;
  }
};

template <class T>
size_t SerializedSize(const T& value) {
  SizeCounter counter;
  msgpack::pack(counter, value);
  return counter.size;
}

// Unpacks `data` with strings and byte arrays referenced in place rather than copied
// into the handle's zone. REQUIRES: `data` outlives the handle.
//
// No container may declare more elements than `data` has bytes (each takes at least
// one): a few corrupt bytes declaring a map of four billion entries are refused rather
// than allocated for (found by tests/fuzz).
inline msgpack::object_handle UnpackInPlace(const char* data, size_t size) {
  msgpack::unpack_limit limit(/*array=*/size, /*map=*/size, /*str=*/size, /*bin=*/size, /*ext=*/size);
  return msgpack::unpack(
      data, size, [](msgpack::type::object_type, std::size_t, void*) { return true; }, nullptr, limit);
}

// Throws orb::Error naming the expected type when the bytes do not hold a T.
template <class T>
T Deserialize(const char* data, size_t size, const char* what = "value") {
  try {
    msgpack::object_handle handle = UnpackInPlace(data, size);  // the conversion copies once
    return handle.get().as<T>();
  } catch (const std::exception& e) {
    throw Error(std::string("cannot deserialize ") + what + " as the requested type: " + e.what());
  }
}

}  // namespace orb::internal
