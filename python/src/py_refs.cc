#include "py_refs.h"

#include <pybind11/stl.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace py = pybind11;

namespace orb::python {
namespace {

// Runs the Python callbacks of when_ready on a thread of its own, with the GIL, so that
// the runtime's threads that signal readiness never wait for the GIL. A callback is a
// raw py::object, freed here with the GIL held; one never called is leaked rather than
// freed without the GIL.
class ReadyNotifier {
 public:
  static ReadyNotifier& Instance() {
    static ReadyNotifier* notifier = new ReadyNotifier();  // never destroyed: its thread runs on
    return *notifier;
  }
  void Post(py::object* callback) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(callback);
    }
    cv_.notify_one();
  }

 private:
  ReadyNotifier() { std::thread([this] { Run(); }).detach(); }
  void Run() {
    while (true) {
      py::object* callback;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !queue_.empty(); });
        callback = queue_.front();
        queue_.pop_front();
      }
      if (!Py_IsInitialized() || _Py_IsFinalizing()) continue;
      py::gil_scoped_acquire gil;
      try {
        (*callback)();
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("orb: a when_ready callback");
      }
      delete callback;
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<py::object*> queue_;  // guarded by mu_
};

}  // namespace

PyObjectRef::~PyObjectRef() {
  if (!internal::IsInitialized()) return;
  try {
    internal::RemoveLocalReference(ref_.id);
  } catch (...) {
  }
}

std::string PyObjectRef::Hex() const {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : ref_.id) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

HeldRefs::~HeldRefs() {
  if (!internal::IsInitialized()) return;
  for (const auto& r : refs_) {
    try {
      internal::RemoveLocalReference(r.id);
    } catch (...) {
    }
  }
}

void HeldRefs::Record() {
  for (const auto& r : refs_) internal::OnRefSerialized(r);  // a hold each...
  for (const auto& r : refs_) internal::RemoveLocalReference(r.id);  // ...in place of ours
  refs_.clear();
}

std::vector<internal::RefData> RefsOf(const std::vector<std::shared_ptr<PyObjectRef>>& refs) {
  std::vector<internal::RefData> out;
  out.reserve(refs.size());
  for (const auto& r : refs) out.push_back(r->ref());
  return out;
}

void DefineRefs(py::module_& m) {
  py::class_<PyObjectRef, std::shared_ptr<PyObjectRef>>(m, "ObjectRef")
      .def("hex", &PyObjectRef::Hex, "the object's ID as 40 hex digits")
      .def("owner_address", [](const PyObjectRef& r) { return r.ref().owner; })
      .def("__repr__", [](const PyObjectRef& r) { return "ObjectRef(" + r.Hex() + ")"; })
      .def("__eq__",
           [](const PyObjectRef& a, const py::object& b) {
             return py::isinstance<PyObjectRef>(b) && a.ref().id == b.cast<const PyObjectRef&>().ref().id;
           })
      .def("__hash__", [](const PyObjectRef& r) { return py::hash(py::bytes(r.ref().id)); })
      .def(
          "future",
          [](const std::shared_ptr<PyObjectRef>& r) { return py::module_::import("orb._async").attr("future_of")(r); },
          "a concurrent.futures.Future of the value (Ray's ObjectRef.future())")
      .def(
          "as_future",
          [](const std::shared_ptr<PyObjectRef>& r) { return py::module_::import("orb._async").attr("awaitable_of")(r); },
          "an asyncio future of the value, for the running event loop (Ray's ObjectRef.as_future())")
      .def(
          "__await__",
          [](const std::shared_ptr<PyObjectRef>& r) {
            return py::module_::import("orb._async").attr("awaitable_of")(r).attr("__await__")();
          },
          "`await ref` in async code: the value, without blocking the event loop")
      .def("__reduce__", [](const PyObjectRef& r) {
        // Pickled inside a value: recorded with a hold for whoever stores the value.
        internal::OnRefSerialized(r.ref());
        py::object rebuild = py::module_::import("orb._serialization").attr("rebuild_ref");
        return py::make_tuple(rebuild, py::make_tuple(py::bytes(r.ref().id), r.ref().owner));
      });
  m.def("_rebuild_ref", [](const py::bytes& id, const std::string& owner) {
    internal::RefData data{std::string(id), owner};
    {
      py::gil_scoped_release release;     // registering may ask the owner
      internal::OnRefDeserialized(data);  // this process now borrows it: one reference
    }
    return std::make_shared<PyObjectRef>(std::move(data));
  });

  py::class_<PyValue>(m, "Value", py::buffer_protocol())
      .def_buffer([](PyValue& v) {
        return py::buffer_info(const_cast<char*>(v.buffer->data()), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(v.buffer->size())}, {1}, /*readonly=*/true);
      })
      .def("__len__", [](const PyValue& v) { return v.buffer->size(); });

  py::class_<HeldRefs, std::shared_ptr<HeldRefs>>(m, "HeldRefs")
      .def(py::init([] { return std::make_shared<HeldRefs>(std::vector<internal::RefData>{}); }), "none")
      .def("__len__", &HeldRefs::size);
  m.def(
      "when_ready",
      [](const std::shared_ptr<PyObjectRef>& ref, const py::function& callback) {
        auto* held = new py::object(callback);
        internal::WhenReady(ref->ref(), [held] { ReadyNotifier::Instance().Post(held); });
      },
      "calls `callback()` (on a thread of orb's, with the GIL) once the object is ready or known lost");
  m.def("take_serialized_refs", [] { return std::make_shared<HeldRefs>(internal::TakeSerializedRefs()); },
        "the ObjectRefs pickled on this thread since the last take, with their holds");
}

}  // namespace orb::python
