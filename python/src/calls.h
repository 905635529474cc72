#pragma once

#include <pybind11/pybind11.h>

namespace orb::python {

// Defines put, submit_task, the actor calls and the key-value calls in the module.
void DefineCalls(pybind11::module_& m);

}  // namespace orb::python
