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

#include <memory>

#include "calls.h"
#include "collective.h"
#include "orb/api.h"
#include "orb/errors.h"
#include "orb/internal/runtime.h"
#include "private_view.h"
#include "py_refs.h"
#include "worker.h"

namespace py = pybind11;
using orb::internal::RefData;
using orb::internal::ValueBuffer;
using orb::python::PyObjectRef;
using orb::python::PyValue;
using orb::python::RefsOf;

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
  auto& crashed = py::register_exception<orb::WorkerCrashedError>(m, "WorkerCrashedError", error.ptr());
  py::register_exception<orb::OutOfMemoryError>(m, "OutOfMemoryError", crashed.ptr());
  py::register_exception<orb::ActorDiedError>(m, "ActorDiedError", error.ptr());
  auto& object_lost = py::register_exception<orb::ObjectLostError>(m, "ObjectLostError", error.ptr());
  // After its base: translators are tried last registered first.
  py::register_exception<orb::OwnerDiedError>(m, "OwnerDiedError", object_lost.ptr());
  py::register_exception<orb::OutOfDiskError>(m, "OutOfDiskError", error.ptr());
  // Also a TimeoutError, as Ray's is: `except TimeoutError` catches a get that timed out.
  py::register_exception<orb::GetTimeoutError>(m, "GetTimeoutError",
                                               py::make_tuple(error, py::handle(PyExc_TimeoutError)));
  py::register_exception<orb::ObjectStoreFullError>(m, "ObjectStoreFullError", error.ptr());
  py::register_exception<orb::InfeasibleError>(m, "InfeasibleError", error.ptr());
  py::register_exception<orb::CollectiveError>(m, "CollectiveError", error.ptr());
  py::register_exception<orb::RuntimeEnvError>(m, "RuntimeEnvError", error.ptr());
  py::register_exception<orb::TaskCancelledError>(m, "TaskCancelledError", error.ptr());

  orb::python::DefineRefs(m);
  orb::python::DefineCalls(m);
  orb::python::DefineWorker(m);
  orb::python::DefineCollective(m);
  orb::python::DefinePrivateViews(m);

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
         const std::map<std::string, double>& resources, long long object_store_memory, bool local_mode,
         const std::vector<std::string>& code_search_path, int prestart_workers) {
        orb::Config config;
        config.address = address;
        config.ray_namespace = ns;
        config.num_cpus = num_cpus;
        config.num_gpus = num_gpus;
        config.resources = resources;
        config.object_store_memory = object_store_memory;
        config.local_mode = local_mode;
        config.code_search_path = code_search_path;
        config.prestart_workers = prestart_workers;
        py::gil_scoped_release release;
        orb::internal::Init(config, 0, nullptr);
      },
      py::arg("address"), py::arg("namespace"), py::arg("num_cpus"), py::arg("num_gpus"), py::arg("resources"),
      py::arg("object_store_memory"), py::arg("local_mode"), py::arg("code_search_path"),
      py::arg("prestart_workers") = 0);
  m.def("shutdown", [] {
    py::gil_scoped_release release;
    orb::internal::Shutdown();
  });
  m.def("is_initialized", &orb::internal::IsInitialized);

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
  m.def(
      "cancel",
      [](const std::shared_ptr<PyObjectRef>& ref, bool force, bool recursive) {
        py::gil_scoped_release release;
        orb::internal::CancelTask(ref->ref().id, force, recursive);
      },
      py::arg("ref"), py::arg("force"), py::arg("recursive"));
  m.def("nodes", [] {
    py::gil_scoped_release release;
    return orb::internal::ClusterNodes();
  });
  m.def("node_id", &orb::internal::CurrentNodeId);
  m.def("job_id", &orb::internal::CurrentJobId);
  m.def("namespace", &orb::internal::CurrentNamespace);
  m.def("gcs_address", &orb::internal::CurrentGcsAddress);
}
