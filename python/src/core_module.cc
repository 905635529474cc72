// orb._core: the Python binding over liborb's non-template runtime boundary
// (include/orb/internal/runtime.h) — not over the C++ template API. It deals in bytes:
// the Python package (orb/) pickles values and calls these.
//
// Values a Python program puts are laid out as written by orb._serialization (a header,
// the pickle stream, then each out-of-band buffer, 64-byte aligned); `get` returns a
// read-only buffer over the value where it lies (the node's shared-memory store for
// large values: no copy), kept alive while anything references it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>

#include "orb/api.h"
#include "orb/errors.h"
#include "orb/internal/runtime.h"

namespace py = pybind11;
using orb::internal::RefData;
using orb::internal::ValueBuffer;

namespace {

// A reference to an object, holding one local reference while it lives (as
// orb::ObjectRef does in C++).
class PyObjectRef {
 public:
  // Takes over the reference `ref` already holds.
  explicit PyObjectRef(RefData ref) : ref_(std::move(ref)) {}
  PyObjectRef(const PyObjectRef&) = delete;
  PyObjectRef& operator=(const PyObjectRef&) = delete;
  ~PyObjectRef() {
    if (orb::internal::IsInitialized()) {
      try {
        orb::internal::RemoveLocalReference(ref_.id);
      } catch (...) {
      }
    }
  }
  const RefData& ref() const { return ref_; }
  std::string Hex() const {
    static const char* kHex = "0123456789abcdef";
    std::string out;
    for (unsigned char c : ref_.id) {
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
    return out;
  }

 private:
  RefData ref_;
};

// A value's bytes for Python's buffer protocol: read-only, and the store keeps the
// object pinned while this (and every memoryview or array over it) lives.
struct PyValue {
  std::shared_ptr<ValueBuffer> buffer;
};

std::vector<RefData> RefsOf(const std::vector<std::shared_ptr<PyObjectRef>>& refs) {
  std::vector<RefData> out;
  out.reserve(refs.size());
  for (const auto& r : refs) out.push_back(r->ref());
  return out;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "orb's C++ core for the orb Python package (do not use directly)";

  // Exceptions: the C++ types, under the names orb.exceptions gives them. pybind11
  // tries the most recently registered translator first, so subclasses follow the base.
  static py::exception<orb::Error> error(m, "OrbError");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const orb::Error& e) {
      error(e.what());
    }
  });
  py::register_exception<orb::TaskError>(m, "TaskError", error.ptr());
  py::register_exception<orb::WorkerCrashedError>(m, "WorkerCrashedError", error.ptr());
  py::register_exception<orb::ActorDiedError>(m, "ActorDiedError", error.ptr());
  py::register_exception<orb::ObjectLostError>(m, "ObjectLostError", error.ptr());
  py::register_exception<orb::GetTimeoutError>(m, "GetTimeoutError", error.ptr());
  py::register_exception<orb::ObjectStoreFullError>(m, "ObjectStoreFullError", error.ptr());
  py::register_exception<orb::InfeasibleError>(m, "InfeasibleError", error.ptr());
  py::register_exception<orb::CollectiveError>(m, "CollectiveError", error.ptr());
  py::register_exception<orb::RuntimeEnvError>(m, "RuntimeEnvError", error.ptr());

  py::class_<PyObjectRef, std::shared_ptr<PyObjectRef>>(m, "ObjectRef")
      .def("hex", &PyObjectRef::Hex, "the object's ID as 40 hex digits")
      .def("owner_address", [](const PyObjectRef& r) { return r.ref().owner; })
      .def("__repr__", [](const PyObjectRef& r) { return "ObjectRef(" + r.Hex() + ")"; })
      .def("__eq__", [](const PyObjectRef& a, const PyObjectRef& b) { return a.ref().id == b.ref().id; })
      .def("__hash__", [](const PyObjectRef& r) { return py::hash(py::bytes(r.ref().id)); });

  py::class_<PyValue>(m, "Value", py::buffer_protocol())
      .def_buffer([](PyValue& v) {
        return py::buffer_info(const_cast<char*>(v.buffer->data()), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(v.buffer->size())}, {1}, /*readonly=*/true);
      })
      .def("__len__", [](const PyValue& v) { return v.buffer->size(); });

  py::class_<orb::NodeInfo>(m, "NodeInfo")
      .def_readonly("node_id", &orb::NodeInfo::node_id)
      .def_readonly("address", &orb::NodeInfo::address)
      .def_readonly("alive", &orb::NodeInfo::alive)
      .def_readonly("resources_total", &orb::NodeInfo::resources_total)
      .def_readonly("resources_available", &orb::NodeInfo::resources_available)
      .def_readonly("labels", &orb::NodeInfo::labels)
      .def_readonly("object_store_memory", &orb::NodeInfo::object_store_memory);

  m.def(
      "init",
      [](const std::string& address, const std::string& ns, double num_cpus, double num_gpus,
         const std::map<std::string, double>& resources, long long object_store_memory, bool local_mode) {
        orb::Config config;
        config.address = address;
        config.ray_namespace = ns;
        config.num_cpus = num_cpus;
        config.num_gpus = num_gpus;
        config.resources = resources;
        config.object_store_memory = object_store_memory;
        config.local_mode = local_mode;
        py::gil_scoped_release release;
        orb::internal::Init(config, 0, nullptr);
      },
      py::arg("address"), py::arg("namespace"), py::arg("num_cpus"), py::arg("num_gpus"), py::arg("resources"),
      py::arg("object_store_memory"), py::arg("local_mode"));
  m.def("shutdown", [] {
    py::gil_scoped_release release;
    orb::internal::Shutdown();
  });
  m.def("is_initialized", &orb::internal::IsInitialized);

  // put(size, write): `write(memoryview)` fills the value's `size` bytes in place.
  m.def("put", [](size_t size, const py::function& write) {
    RefData ref = orb::internal::PutWith(size, [&](char* destination) {
      py::memoryview view = py::memoryview::from_memory(destination, static_cast<py::ssize_t>(size), /*readonly=*/false);
      write(view);
      view.attr("release")();
    });
    return std::make_shared<PyObjectRef>(std::move(ref));
  });
  m.def(
      "get",
      [](const std::vector<std::shared_ptr<PyObjectRef>>& refs, int64_t timeout_ms) {
        std::vector<std::shared_ptr<ValueBuffer>> values;
        {
          py::gil_scoped_release release;
          values = orb::internal::Get(RefsOf(refs), timeout_ms);
        }
        std::vector<PyValue> out;
        out.reserve(values.size());
        for (auto& v : values) out.push_back(PyValue{std::move(v)});
        return out;
      },
      py::arg("refs"), py::arg("timeout_ms"));
  m.def(
      "wait",
      [](const std::vector<std::shared_ptr<PyObjectRef>>& refs, int num_returns, int64_t timeout_ms) {
        py::gil_scoped_release release;
        return orb::internal::Wait(RefsOf(refs), num_returns, timeout_ms);
      },
      py::arg("refs"), py::arg("num_returns"), py::arg("timeout_ms"));
  m.def("nodes", [] {
    py::gil_scoped_release release;
    return orb::internal::ClusterNodes();
  });
  m.def("node_id", &orb::internal::CurrentNodeId);
  m.def("job_id", &orb::internal::CurrentJobId);
  m.def("namespace", &orb::internal::CurrentNamespace);
  m.def("gcs_address", &orb::internal::CurrentGcsAddress);
}
