// ObjectRefs as Python sees them, and the references a pickled value holds.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "orb/internal/runtime.h"

namespace orb::python {

// A reference to an object, holding one local reference while it lives (as
// orb::ObjectRef does in C++). Pickling one inside a value records it (with a hold) for
// whoever stores the value; unpickling makes this process a borrower.
class PyObjectRef {
 public:
  // Takes over the reference `ref` already holds.
  explicit PyObjectRef(internal::RefData ref) : ref_(std::move(ref)) {}
  PyObjectRef(const PyObjectRef&) = delete;
  PyObjectRef& operator=(const PyObjectRef&) = delete;
  ~PyObjectRef();
  const internal::RefData& ref() const { return ref_; }
  std::string Hex() const;

 private:
  internal::RefData ref_;
};

// The ObjectRefs pickled inside one value, each held once: taken from this thread's
// record right after pickling, so that nothing else on the thread picks them up. They
// are released when this dies, unless handed on with Take().
class HeldRefs {
 public:
  explicit HeldRefs(std::vector<internal::RefData> refs) : refs_(std::move(refs)) {}
  HeldRefs(const HeldRefs&) = delete;
  HeldRefs& operator=(const HeldRefs&) = delete;
  ~HeldRefs();
  std::vector<internal::RefData> Take() { return std::move(refs_); }
  size_t size() const { return refs_.size(); }
  // Moves the holds back onto this thread's record, for the runtime to take (a task's
  // result, a value being put).
  void Record();

 private:
  std::vector<internal::RefData> refs_;
};

// A value's bytes for Python's buffer protocol: read-only, and the store keeps the
// object pinned while this (and every memoryview or array over it) lives.
struct PyValue {
  std::shared_ptr<internal::ValueBuffer> buffer;
};

std::vector<internal::RefData> RefsOf(const std::vector<std::shared_ptr<PyObjectRef>>& refs);

// Defines ObjectRef, Value, HeldRefs and their helpers in the module.
void DefineRefs(pybind11::module_& m);

}  // namespace orb::python
