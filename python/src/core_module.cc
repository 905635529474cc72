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

#include <algorithm>
#include <chrono>
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

namespace {

// A get or wait that blocks the main thread waits in slices of this, running Python's
// signal handlers between them, so that Ctrl-C (KeyboardInterrupt), a handler of the
// program's own, or in a worker the cancel of its task ends the wait, as in Ray.
constexpr int64_t kSignalCheckMs = 100;

unsigned long main_thread_ident = 0;  // set when the module is imported

bool WaitsInSlices(int64_t timeout_ms) {
  return PyThread_get_thread_ident() == main_thread_ident && (timeout_ms < 0 || timeout_ms > kSignalCheckMs);
}

// While it lives, a worker waiting in slices lends its CPU, as one long wait would.
struct BlockedWait {
  BlockedWait() {
    py::gil_scoped_release release;
    orb::internal::BeginBlockedWait();
  }
  ~BlockedWait() {
    py::gil_scoped_release release;
    orb::internal::EndBlockedWait();
  }
  BlockedWait(const BlockedWait&) = delete;
  BlockedWait& operator=(const BlockedWait&) = delete;
};

// Runs `wait(slice_ms)` (which returns whether it is done) with the GIL released until
// it is done or timeout_ms (< 0: never) has passed; on the main thread (WaitsInSlices) in
// slices, running signal handlers between them: an exception one raises ends it.
template <class Wait>
void WaitInterruptibly(int64_t timeout_ms, Wait&& wait) {
  if (!WaitsInSlices(timeout_ms)) {
    py::gil_scoped_release release;
    wait(timeout_ms);
    return;
  }
  {
    py::gil_scoped_release release;
    if (wait(0)) return;  // done already: nothing to wait for, no CPU to lend
  }
  BlockedWait blocked;
  using Clock = std::chrono::steady_clock;
  auto deadline = timeout_ms < 0 ? Clock::time_point::max() : Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    int64_t slice = kSignalCheckMs;
    if (deadline != Clock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      slice = std::clamp<int64_t>(left, 0, kSignalCheckMs);
    }
    bool done;
    {
      py::gil_scoped_release release;
      done = wait(slice);
    }
    if (done || Clock::now() >= deadline) return;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
}

// A driver's blocking get on the main thread: orb::internal::Get in slices, running
// signal handlers between them (a driver has no CPU to lend, and one call per slice
// costs less than a wait before the get).
std::vector<std::shared_ptr<ValueBuffer>> GetInSlices(const std::vector<RefData>& refs, int64_t timeout_ms) {
  using Clock = std::chrono::steady_clock;
  auto deadline = timeout_ms < 0 ? Clock::time_point::max() : Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    int64_t slice = kSignalCheckMs;
    bool last = false;
    if (deadline != Clock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      last = left <= kSignalCheckMs;
      slice = std::clamp<int64_t>(left, 0, kSignalCheckMs);
    }
    try {
      py::gil_scoped_release release;
      return orb::internal::Get(refs, slice);
    } catch (const orb::GetTimeoutError&) {
      if (last) throw;
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
}

// orb::internal::Wait, interruptible (above).
std::vector<bool> WaitForRefs(const std::vector<RefData>& refs, int num_objects, int64_t timeout_ms) {
  std::vector<bool> ready;
  WaitInterruptibly(timeout_ms, [&](int64_t slice_ms) {
    ready = orb::internal::Wait(refs, num_objects, slice_ms);
    return std::count(ready.begin(), ready.end(), true) >= num_objects;
  });
  return ready;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "orb's C++ core for the orb Python package (do not use directly)";
  main_thread_ident = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();

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
  // Also a ValueError, as Ray's "Actor with name ... already exists" is.
  py::register_exception<orb::NameTakenError>(m, "NameTakenError", py::make_tuple(error, py::handle(PyExc_ValueError)));
  py::register_exception<orb::ObjectRefStreamEndOfStreamError>(m, "ObjectRefStreamEndOfStreamError", error.ptr());

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
         const std::vector<std::string>& code_search_path, int prestart_workers, const std::string& runtime_env,
         bool detached_actors_by_default) {
        orb::Config config;
        if (!runtime_env.empty()) config.runtime_env = orb::RuntimeEnv::Deserialize(runtime_env);
        config.address = address;
        config.ray_namespace = ns;
        config.num_cpus = num_cpus;
        config.num_gpus = num_gpus;
        config.resources = resources;
        config.object_store_memory = object_store_memory;
        config.local_mode = local_mode;
        config.code_search_path = code_search_path;
        config.prestart_workers = prestart_workers;
        if (detached_actors_by_default) config.default_actor_lifetime = orb::ActorLifetime::DETACHED;
        py::gil_scoped_release release;
        orb::internal::Init(config, 0, nullptr);
      },
      py::arg("address"), py::arg("namespace"), py::arg("num_cpus"), py::arg("num_gpus"), py::arg("resources"),
      py::arg("object_store_memory"), py::arg("local_mode"), py::arg("code_search_path"),
      py::arg("prestart_workers") = 0, py::arg("runtime_env") = "", py::arg("detached_actors_by_default") = false);
  m.def("shutdown", [] {
    py::gil_scoped_release release;
    orb::internal::Shutdown();
  });
  m.def("is_initialized", &orb::internal::IsInitialized);

  m.def(
      "get",
      [](const std::vector<std::shared_ptr<PyObjectRef>>& refs, int64_t timeout_ms) {
        std::vector<RefData> data = RefsOf(refs);
        if (WaitsInSlices(timeout_ms) && !orb::python::IsWorkerProcess()) {
          std::vector<PyValue> out;
          for (auto& v : GetInSlices(data, timeout_ms)) out.push_back(PyValue{std::move(v)});
          return out;
        }
        if (WaitsInSlices(timeout_ms)) {
          // Until all are ready (or the time is up): the get below then takes no wait.
          auto start = std::chrono::steady_clock::now();
          WaitForRefs(data, static_cast<int>(data.size()), timeout_ms);
          if (timeout_ms >= 0) {
            auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
            timeout_ms = std::max<int64_t>(0, timeout_ms - spent.count());
          }
        }
        std::vector<std::shared_ptr<ValueBuffer>> values;
        {
          py::gil_scoped_release release;
          values = orb::internal::Get(data, timeout_ms);
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
        return WaitForRefs(RefsOf(refs), num_returns, timeout_ms);
      },
      py::arg("refs"), py::arg("num_returns"), py::arg("timeout_ms"));
  // A streaming task's next item: its ObjectRef, or None once the task ended with no
  // more (GetTimeoutError after timeout_ms).
  m.def(
      "next_generator_item",
      [](const std::shared_ptr<PyObjectRef>& task_ref, int64_t timeout_ms) -> py::object {
        RefData item;
        auto next = orb::internal::GeneratorNext::kTimedOut;
        WaitInterruptibly(timeout_ms, [&](int64_t slice_ms) {
          next = orb::internal::NextGeneratorItem(task_ref->ref(), slice_ms, &item);
          return next != orb::internal::GeneratorNext::kTimedOut;
        });
        if (next == orb::internal::GeneratorNext::kItem) return py::cast(std::make_shared<PyObjectRef>(std::move(item)));
        if (next == orb::internal::GeneratorNext::kEnd) return py::none();
        throw orb::GetTimeoutError("no item of the generator came within " + std::to_string(timeout_ms) + " ms");
      },
      py::arg("task_ref"), py::arg("timeout_ms"));
  // Whether a streaming task's next item (or its end) is here within timeout_ms; takes
  // nothing (orb.wait's question).
  m.def(
      "generator_item_ready",
      [](const std::shared_ptr<PyObjectRef>& task_ref, int64_t timeout_ms) {
        auto next = orb::internal::GeneratorNext::kTimedOut;
        WaitInterruptibly(timeout_ms, [&](int64_t slice_ms) {
          next = orb::internal::NextGeneratorItem(task_ref->ref(), slice_ms, nullptr);
          return next != orb::internal::GeneratorNext::kTimedOut;
        });
        return next != orb::internal::GeneratorNext::kTimedOut;
      },
      py::arg("task_ref"), py::arg("timeout_ms"));
  m.def(
      "peek_generator_items",
      [](const std::shared_ptr<PyObjectRef>& task_ref, int64_t n) {
        std::vector<RefData> items;
        {
          py::gil_scoped_release release;
          items = orb::internal::PeekGeneratorItems(task_ref->ref(), n);
        }
        std::vector<std::shared_ptr<PyObjectRef>> out;
        for (auto& item : items) out.push_back(std::make_shared<PyObjectRef>(std::move(item)));
        return out;
      },
      py::arg("task_ref"), py::arg("n"));
  m.def(
      "drop_generator", [](const std::shared_ptr<PyObjectRef>& task_ref) { orb::internal::DropGenerator(task_ref->ref()); },
      py::arg("task_ref"));
  m.def(
      "cancel",
      [](const std::shared_ptr<PyObjectRef>& ref, bool force, bool recursive) {
        py::gil_scoped_release release;
        orb::internal::CancelTask(ref->ref(), force, recursive);
      },
      py::arg("ref"), py::arg("force"), py::arg("recursive"));
  m.def("nodes", [] {
    py::gil_scoped_release release;
    return orb::internal::ClusterNodes();
  });
  m.def("node_id", &orb::internal::CurrentNodeId);
  m.def("job_id", &orb::internal::CurrentJobId);
  m.def("worker_id", &orb::internal::CurrentWorkerId);
  m.def("namespace", &orb::internal::CurrentNamespace);
  m.def("gcs_address", &orb::internal::CurrentGcsAddress);
}
