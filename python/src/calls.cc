// Tasks, actors and objects: orb._core's calls into the runtime boundary.
#include "calls.h"

#include <pybind11/stl.h>

#include "orb/errors.h"
#include "orb/internal/runtime.h"
#include "orb/placement_group.h"
#include "orb/state.h"
#include "py_refs.h"

namespace py = pybind11;

namespace orb::python {
namespace {

using internal::ArgData;
using internal::RefData;

// A serialized value's bytes: `value.write(memoryview)` fills `value.size` bytes.
std::string WriteToString(const py::handle& value) {
  std::string out(value.attr("size").cast<size_t>(), '\0');
  py::memoryview view = py::memoryview::from_memory(out.data(), static_cast<py::ssize_t>(out.size()));
  value.attr("write")(view);
  view.attr("release")();
  return out;
}

// Arguments as orb._remote lays them out: an ObjectRef (passed by reference, arriving
// as its value), raw bytes, or a serialized value with the refs pickled in it.
std::vector<ArgData> ToArgs(const py::list& args) {
  std::vector<ArgData> out;
  out.reserve(args.size());
  for (const auto& arg : args) {
    ArgData data;
    if (py::isinstance<PyObjectRef>(arg)) {
      data.is_ref = true;
      data.ref = arg.cast<const PyObjectRef&>().ref();
    } else if (py::isinstance<py::bytes>(arg)) {
      data.value = arg.cast<std::string>();
    } else {
      data.value = WriteToString(arg);
      data.contained_refs = arg.attr("refs").cast<std::shared_ptr<HeldRefs>>()->Take();
    }
    out.push_back(std::move(data));
  }
  return out;
}

template <class T>
void Set(const py::dict& d, const char* key, T* out) {
  if (d.contains(key)) *out = d[key].cast<T>();
}

internal::TaskOptionsData ToTaskOptions(const py::dict& d) {
  internal::TaskOptionsData o;
  if (d.contains("resources")) {
    o.resources = d["resources"].cast<std::map<std::string, double>>();
    o.resources_set = true;
  }
  Set(d, "max_retries", &o.max_retries);
  Set(d, "retry_exceptions", &o.retry_exceptions);
  Set(d, "max_calls", &o.max_calls);
  Set(d, "retry_exception_allowlist", &o.retry_exception_allowlist);
  Set(d, "num_returns", &o.num_returns);
  Set(d, "streaming", &o.streaming);
  Set(d, "generator_backpressure", &o.generator_backpressure);
  Set(d, "memory_growth", &o.memory_growth);
  Set(d, "max_memory", &o.max_memory);
  Set(d, "name", &o.name);
  Set(d, "strategy", &o.strategy);
  Set(d, "affinity_node_id", &o.affinity_node_id);
  Set(d, "affinity_soft", &o.affinity_soft);
  Set(d, "label_selector", &o.label_selector);
  Set(d, "soft_label_selector", &o.soft_label_selector);
  Set(d, "placement_group_id", &o.placement_group_id);
  Set(d, "bundle_index", &o.bundle_index);
  Set(d, "capture_child_tasks", &o.capture_child_tasks);
  Set(d, "leave_captured_group", &o.leave_captured_group);
  Set(d, "concurrency_group", &o.concurrency_group);
  Set(d, "runtime_env", &o.runtime_env);
  int language = 1;
  Set(d, "language", &language);
  o.language = static_cast<internal::Language>(language);
  return o;
}

internal::ActorOptionsData ToActorOptions(const py::dict& d) {
  internal::ActorOptionsData o;
  o.placement = ToTaskOptions(d);
  Set(d, "name", &o.name);
  o.placement.name.clear();
  Set(d, "task_name", &o.placement.name);  // its creation task's name
  Set(d, "namespace", &o.ray_namespace);
  Set(d, "max_restarts", &o.max_restarts);
  Set(d, "max_task_retries", &o.max_task_retries);
  Set(d, "max_concurrency", &o.max_concurrency);
  Set(d, "concurrency_groups", &o.concurrency_groups);
  if (d.contains("detached")) {
    o.detached = d["detached"].cast<bool>();
    o.lifetime_set = true;
  }
  return o;
}

std::shared_ptr<PyObjectRef> NewRef(RefData ref) { return std::make_shared<PyObjectRef>(std::move(ref)); }

// A task's returns as Python sees them: one ref, or a list of num_returns refs.
py::object NewRefs(std::vector<RefData> refs, int num_returns) {
  if (num_returns == 1) return py::cast(NewRef(std::move(refs.front())));
  py::list out;
  for (auto& ref : refs) out.append(NewRef(std::move(ref)));
  return out;
}

}  // namespace

void DefineCalls(py::module_& m) {
  // put(value): `value.write(memoryview)` fills its `value.size` bytes in place (in the
  // shared-memory store for large values); `value.refs`: ObjectRefs pickled in it.
  m.def("put", [](const py::object& value) {
    auto refs = value.attr("refs").cast<std::shared_ptr<HeldRefs>>();
    size_t size = value.attr("size").cast<size_t>();
    RefData ref = internal::PutWith(size, [&](char* destination) {
      py::memoryview view = py::memoryview::from_memory(destination, static_cast<py::ssize_t>(size));
      value.attr("write")(view);
      view.attr("release")();
      refs->Record();  // the stored value holds them from now on
    });
    return NewRef(std::move(ref));
  });
  m.def("submit_task", [](const std::string& function, const py::list& args, const py::dict& options) {
    auto data = ToArgs(args);
    auto opts = ToTaskOptions(options);
    std::vector<RefData> refs;
    {
      py::gil_scoped_release release;
      refs = internal::SubmitTaskReturns(function, std::move(data), opts);
    }
    return NewRefs(std::move(refs), opts.num_returns);
  });
  m.def("create_actor", [](const std::string& factory, const py::list& args, const py::dict& options) {
    auto data = ToArgs(args);
    auto opts = ToActorOptions(options);
    py::gil_scoped_release release;
    return py::bytes(internal::CreateActor(factory, std::move(data), opts));
  });
  // `handles`: the ref that keeps the actor alive (track_actor), held by the call until
  // it is done; None for an actor not collected.
  m.def("submit_actor_task",
        [](const py::bytes& actor_id, const std::string& method, const py::list& args, const py::dict& options,
           const py::object& handles) {
          auto data = ToArgs(args);
          auto opts = ToTaskOptions(options);
          if (!handles.is_none() && !data.empty()) {
            RefData held = handles.cast<const PyObjectRef&>().ref();
            internal::AddLocalReference(held.id);  // dropped when the call is done
            data.front().contained_refs.push_back(std::move(held));
          }
          std::string id = actor_id;
          std::vector<RefData> refs;
          {
            py::gil_scoped_release release;
            refs = internal::SubmitActorTaskReturns(id, method, std::move(data), opts);
          }
          return NewRefs(std::move(refs), opts.num_returns);
        });
  m.def("track_actor", [](const py::bytes& actor_id) {
    std::string id = actor_id;
    RefData ref;
    {
      py::gil_scoped_release release;
      ref = internal::TrackActorHandles(id);
    }
    return NewRef(std::move(ref));
  });
  m.def("kill_actor", [](const py::bytes& actor_id, bool no_restart) {
    std::string id = actor_id;
    py::gil_scoped_release release;
    internal::KillActor(id, no_restart, "killed by orb.kill()");
  });
  m.def("get_named_actor", [](const std::string& name, const std::string& ns) {
    std::string id;
    {
      py::gil_scoped_release release;
      id = internal::GetNamedActor(name, ns);
    }
    return py::bytes(id);
  });
  // orb::state::List: the cluster's rows of one kind (actors, nodes, ...) as dicts of text.
  m.def(
      "list_state",
      [](const std::string& kind, const std::vector<std::tuple<std::string, std::string, std::string>>& filters,
         int limit) {
        std::vector<orb::state::Filter> by;
        for (const auto& [key, predicate, value] : filters) by.push_back({key, predicate, value});
        py::gil_scoped_release release;
        return orb::state::List(kind, by, limit);
      },
      py::arg("kind"), py::arg("filters"), py::arg("limit"));
  m.def("current_actor_id", &internal::CurrentActorId);
  m.def("placement_group_id", &internal::CurrentPlacementGroupId);
  m.def("assigned_resources", &internal::CurrentTaskResources);
  m.def("cluster_endpoints", [] {
    internal::ClusterEndpoints endpoints;
    {
      py::gil_scoped_release release;
      endpoints = internal::GetClusterEndpoints();
    }
    py::dict out;
    out["dashboard"] = endpoints.dashboard;
    out["metrics"] = endpoints.metrics;
    return out;
  });
  // The process's environment as C sees it (os.environ is a copy made at start-up).
  m.def("c_getenv", [](const std::string& name) -> py::object {
    const char* value = std::getenv(name.c_str());
    return value ? py::object(py::str(value)) : py::object(py::none());
  });
  m.def("was_current_actor_restarted", &internal::WasCurrentActorRestarted);
  m.def("task_id", &internal::CurrentTaskId);
  m.def("kv_put", [](const std::string& ns, const std::string& key, const py::bytes& value) {
    std::string v = value;
    py::gil_scoped_release release;
    internal::KvPut(ns, key, v);
  });
  m.def("kv_get", [](const std::string& ns, const std::string& key) -> py::object {
    std::string value;
    bool found;
    {
      py::gil_scoped_release release;
      found = internal::KvGet(ns, key, &value);
    }
    if (!found) return py::none();
    return py::bytes(value);
  });
  m.def("create_placement_group", [](const std::vector<std::map<std::string, double>>& bundles, int strategy,
                                     const std::string& name, bool detached) {
    PlacementGroupCreationOptions options;
    options.name = name;
    for (const auto& b : bundles) options.bundles.push_back(b);
    options.strategy = static_cast<PlacementStrategy>(strategy);
    options.lifetime = detached ? ActorLifetime::DETACHED : ActorLifetime::NON_DETACHED;
    py::gil_scoped_release release;
    return internal::CreatePlacementGroup(options);
  });
  m.def("wait_placement_group_ready", [](const std::string& id_hex, int64_t timeout_ms) {
    py::gil_scoped_release release;
    return internal::WaitPlacementGroupReady(id_hex, timeout_ms);
  });
  m.def("remove_placement_group", [](const std::string& id_hex) {
    py::gil_scoped_release release;
    internal::RemovePlacementGroup(id_hex);
  });
  // A group as a dict (id, name, bundles, strategy, state: the enums' numbers).
  auto group_dict = [](const internal::PlacementGroupData& data) {
    py::dict out;
    out["id"] = data.id;
    out["name"] = data.options.name;
    out["bundles"] = static_cast<const std::vector<std::map<std::string, double>>&>(data.options.bundles);
    out["strategy"] = static_cast<int>(data.options.strategy);
    out["state"] = data.state;
    out["detached"] = data.options.lifetime == ActorLifetime::DETACHED;
    return out;
  };
  m.def("lookup_placement_group", [group_dict](const std::string& id_hex, const std::string& name) -> py::object {
    internal::PlacementGroupData data;
    bool found;
    {
      py::gil_scoped_release release;
      found = internal::LookUpPlacementGroup(id_hex, name, &data);
    }
    if (!found) return py::none();
    return group_dict(data);
  });
  m.def("list_placement_groups", [group_dict]() {
    std::vector<internal::PlacementGroupData> groups;
    {
      py::gil_scoped_release release;
      groups = internal::ListPlacementGroups();
    }
    py::list out;
    for (const auto& data : groups) out.append(group_dict(data));
    return out;
  });
  m.def("set_python_workers", &internal::SetPythonWorkers, py::arg("executable"), py::arg("path"));
}

}  // namespace orb::python
