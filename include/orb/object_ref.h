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

#include "orb/internal/runtime.h"
#include "orb/serialization.h"

namespace orb {

namespace internal {
// Marks a RefData that already carries one reference (from SubmitTask or Put).
struct AdoptRef {};
}  // namespace internal

template <class T>
class ObjectRef {
 public:
  using ValueType = T;

  ObjectRef() = default;
  explicit ObjectRef(internal::RefData data) : data_(std::move(data)) { Acquire(); }
  ObjectRef(internal::RefData data, internal::AdoptRef) : data_(std::move(data)) {}
  ObjectRef(const ObjectRef& other) : data_(other.data_) { Acquire(); }
  ObjectRef(ObjectRef&& other) noexcept : data_(std::move(other.data_)) { other.data_.id.clear(); }
  ObjectRef& operator=(const ObjectRef& other) {
    if (this != &other) {
      Release();
      data_ = other.data_;
      Acquire();
    }
    return *this;
  }
  ObjectRef& operator=(ObjectRef&& other) noexcept {
    if (this != &other) {
      Release();
      data_ = std::move(other.data_);
      other.data_.id.clear();
    }
    return *this;
  }
  ~ObjectRef() { Release(); }

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

  // Same as orb::Get(*this, timeout_ms): blocks; throws on failure.
  std::shared_ptr<T> Get(int64_t timeout_ms = -1) const {
    auto buffers = internal::Get({data_}, timeout_ms);
    return std::make_shared<T>(internal::Deserialize<T>(buffers[0]->data(), buffers[0]->size(), "object"));
  }

  const internal::RefData& data() const { return data_; }

 private:
  void Acquire() {
    if (!data_.id.empty()) internal::AddLocalReference(data_.id);
  }
  void Release() {
    if (!data_.id.empty()) internal::RemoveLocalReference(data_.id);
  }
  internal::RefData data_;
};

template <class T>
struct WaitResult {
  std::vector<ObjectRef<T>> ready;
  std::vector<ObjectRef<T>> unready;
};

}  // namespace orb
