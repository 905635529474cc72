// orb.collective's core: the C++ collectives (Gloo on the CPU, NCCL on GPUs), on memory
// that orb.collective describes as (address, element count, dtype, device) — a numpy
// array's or a torch tensor's own, so that every call works in place.
#include "collective.h"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <chrono>

#include "orb/collective.h"

namespace py = pybind11;

namespace orb::python {
namespace {

namespace col = orb::collective;

col::Tensor ToTensor(uintptr_t address, size_t count, int dtype, int device) {
  return col::Tensor{reinterpret_cast<void*>(address), count, static_cast<col::DType>(dtype), device};
}

// Binds a collective on one tensor, the GIL released while it runs.
template <class F>
void DefineOnTensor(py::module_& m, const char* name, F call) {
  m.def(name, [call](uintptr_t address, size_t count, int dtype, int device, const std::string& group, int arg) {
    col::Tensor t = ToTensor(address, count, dtype, device);
    py::gil_scoped_release release;
    call(t, group, arg);
  });
}

}  // namespace

void DefineCollective(py::module_& m) {
  m.def("collective_init_group", [](const std::string& group, int world_size, int rank, int backend, double timeout_s) {
    auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    py::gil_scoped_release release;
    col::InitGroup(group, world_size, rank, static_cast<col::Backend>(backend), timeout);
  });
  m.def("collective_create_group_of_actors",
        [](const std::vector<std::string>& actor_ids_hex, const std::string& group, int backend, double timeout_s) {
          auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
          py::gil_scoped_release release;
          col::internal::CreateGroupOfActors(actor_ids_hex, group, static_cast<col::Backend>(backend), timeout);
        });
  DefineOnTensor(m, "collective_allreduce",
                 [](col::Tensor t, const std::string& g, int op) { col::AllReduce(t, g, static_cast<col::ReduceOp>(op)); });
  DefineOnTensor(m, "collective_broadcast", [](col::Tensor t, const std::string& g, int root) { col::Broadcast(t, root, g); });
  DefineOnTensor(m, "collective_send", [](col::Tensor t, const std::string& g, int dst) { col::Send(t, dst, g); });
  DefineOnTensor(m, "collective_recv", [](col::Tensor t, const std::string& g, int src) { col::Recv(t, src, g); });
  m.def("collective_reduce", [](uintptr_t address, size_t count, int dtype, int device, const std::string& group,
                                int root, int op) {
    col::Tensor t = ToTensor(address, count, dtype, device);
    py::gil_scoped_release release;
    col::Reduce(t, root, group, static_cast<col::ReduceOp>(op));
  });
  // Two tensors: (in, out).
  m.def("collective_allgather", [](uintptr_t in, size_t in_count, uintptr_t out, size_t out_count, int dtype, int device,
                                   const std::string& group) {
    col::Tensor a = ToTensor(in, in_count, dtype, device), b = ToTensor(out, out_count, dtype, device);
    py::gil_scoped_release release;
    col::AllGather(a, b, group);
  });
  m.def("collective_reducescatter", [](uintptr_t in, size_t in_count, uintptr_t out, size_t out_count, int dtype,
                                       int device, const std::string& group, int op) {
    col::Tensor a = ToTensor(in, in_count, dtype, device), b = ToTensor(out, out_count, dtype, device);
    py::gil_scoped_release release;
    col::ReduceScatter(a, b, group, static_cast<col::ReduceOp>(op));
  });
  m.def("collective_barrier", [](const std::string& group) {
    py::gil_scoped_release release;
    col::Barrier(group);
  });
  m.def("collective_rank", &col::GetRank);
  m.def("collective_world_size", &col::GetWorldSize);
  m.def("collective_destroy_group", [](const std::string& group) {
    py::gil_scoped_release release;
    col::DestroyGroup(group);
  });
}

}  // namespace orb::python
