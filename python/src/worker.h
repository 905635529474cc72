#pragma once

#include <pybind11/pybind11.h>

namespace orb::python {

// Defines run_worker (a Python worker's main loop) and ActorExit in the module.
void DefineWorker(pybind11::module_& m);

}  // namespace orb::python
