// ObjectRef<T>: a reference to a value that exists (or will) somewhere in the cluster.
//
// The process that created the object (by Put or by submitting the task that returns
// it) owns it. Copies of an ObjectRef are counted; when the owner holds none and no
// pending task needs it, the object is freed. Thread-safe: refs may be copied, passed
// and dropped on any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "orb/buffer.h"
#include "orb/internal/runtime.h"
#include "orb/serialization.h"

namespace orb {

namespace internal {
// Marks a RefData that already carries one reference (from SubmitTask or Put).
struct AdoptRef {};
}  // namespace internal

namespace internal {

// The value Get returns for the bytes in `buffer`: deserialized into a new T, or, for an
// orb::Buffer holding a byte string, a view of the bytes where they are (zero-copy).
template <class T>
std::shared_ptr<T> ValueOf(const std::shared_ptr<ValueBuffer>& buffer) {
  return std::make_shared<T>(Deserialize<T>(buffer->data(), buffer->size(), "object"));
}
template <>
inline std::shared_ptr<Buffer> ValueOf<Buffer>(const std::shared_ptr<ValueBuffer>& buffer) {
  msgpack::object_handle handle;
  try {
    handle = UnpackInPlace(buffer->data(), buffer->size());  // byte strings stay where they are
  } catch (const std::exception& e) {
    throw Error(std::string("cannot deserialize object as the requested type: ") + e.what());
  }
  const msgpack::object& o = handle.get();
  if (o.type != msgpack::type::BIN && o.type != msgpack::type::STR) {
    return std::make_shared<Buffer>(Deserialize<Buffer>(buffer->data(), buffer->size(), "object"));  // throws
  }
  const char* bytes = o.type == msgpack::type::BIN ? o.via.bin.ptr : o.via.str.ptr;
  size_t size = o.type == msgpack::type::BIN ? o.via.bin.size : o.via.str.size;
  return std::make_shared<Buffer>(std::shared_ptr<const void>(buffer), reinterpret_cast<const uint8_t*>(bytes), size);
}

// What every ObjectRef<T> shares: the reference itself, counted in the owner while
// this copy lives.
class ObjectRefBase {
 public:
  ObjectRefBase() = default;
  explicit ObjectRefBase(RefData data) : data_(std::move(data)) { Acquire(); }
  ObjectRefBase(RefData data, AdoptRef) : data_(std::move(data)) {}
  ObjectRefBase(const ObjectRefBase& other) : data_(other.data_) { Acquire(); }
  ObjectRefBase(ObjectRefBase&& other) noexcept : data_(std::move(other.data_)) { other.data_.id.clear(); }
  ObjectRefBase& operator=(const ObjectRefBase& other) {
    if (this != &other) {
      Release();
      data_ = other.data_;
      Acquire();
    }
    return *this;
  }
  ObjectRefBase& operator=(ObjectRefBase&& other) noexcept {
    if (this != &other) {
      Release();
      data_ = std::move(other.data_);
      other.data_.id.clear();
    }
    return *this;
  }
  ~ObjectRefBase() { Release(); }

  // The object's ID as a hex string.
  std::string ID() const {
    static const char kDigits[] = "0123456789abcdef";
    std::string hex;
    for (unsigned char c : data_.id) {
      hex.push_back(kDigits[c >> 4]);
      hex.push_back(kDigits[c & 0xF]);
    }
    return hex;
  }
  bool IsNil() const { return data_.id.empty(); }
  bool operator==(const ObjectRefBase& other) const { return data_.id == other.data_.id; }
  bool operator!=(const ObjectRefBase& other) const { return !(*this == other); }

  const RefData& data() const { return data_; }

 private:
  void Acquire() {
    if (!data_.id.empty()) AddLocalReference(data_.id);
  }
  void Release() {
    if (!data_.id.empty()) RemoveLocalReference(data_.id);
  }
  RefData data_;
};

}  // namespace internal

template <class T>
class ObjectRef : public internal::ObjectRefBase {
 public:
  using ValueType = T;
  using ObjectRefBase::ObjectRefBase;

  // Same as orb::Get(*this, timeout_ms): blocks; throws on failure.
  std::shared_ptr<T> Get(int64_t timeout_ms = -1) const {
    auto buffers = internal::Get({data()}, timeout_ms);
    internal::BorrowScope scope;  // ObjectRefs inside the value are registered before it goes
    return internal::ValueOf<T>(buffers[0]);
  }
};

// The result of a task or method that returns void: Get() waits for it to finish and
// throws what it threw.
template <>
class ObjectRef<void> : public internal::ObjectRefBase {
 public:
  using ValueType = void;
  using ObjectRefBase::ObjectRefBase;

  void Get(int64_t timeout_ms = -1) const { internal::Get({data()}, timeout_ms); }
};

}  // namespace orb

// An ObjectRef inside a value (a task argument, a Put, a task's result, an actor's
// state) travels as [object ID, owner address]. The process that reads it becomes a
// borrower; the owner keeps the object while any borrower holds it.
namespace msgpack {
MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS) {
namespace adaptor {

template <class T>
struct pack<orb::ObjectRef<T>> {
  template <class Stream>
  msgpack::packer<Stream>& operator()(msgpack::packer<Stream>& out, const orb::ObjectRef<T>& ref) const {
    const orb::internal::RefData& data = ref.data();
    if (!data.id.empty()) orb::internal::OnRefSerialized(data);
    out.pack_array(2);
    out.pack_bin(static_cast<uint32_t>(data.id.size()));
    out.pack_bin_body(data.id.data(), static_cast<uint32_t>(data.id.size()));
    out.pack(data.owner);
    return out;
  }
};

template <class T>
struct convert<orb::ObjectRef<T>> {
  const msgpack::object& operator()(const msgpack::object& in, orb::ObjectRef<T>& ref) const {
    if (in.type != msgpack::type::ARRAY || in.via.array.size != 2 || in.via.array.ptr[0].type != msgpack::type::BIN) {
      throw msgpack::type_error();
    }
    orb::internal::RefData data;
    data.id.assign(in.via.array.ptr[0].via.bin.ptr, in.via.array.ptr[0].via.bin.size);
    data.owner = in.via.array.ptr[1].as<std::string>();
    if (data.id.empty()) {
      ref = orb::ObjectRef<T>();
      return in;
    }
    orb::internal::OnRefDeserialized(data);
    ref = orb::ObjectRef<T>(std::move(data), orb::internal::AdoptRef{});
    return in;
  }
};

}  // namespace adaptor
}  // MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS)
}  // namespace msgpack

namespace orb {

template <class T>
struct WaitResult {
  std::vector<ObjectRef<T>> ready;
  std::vector<ObjectRef<T>> unready;
};

}  // namespace orb
