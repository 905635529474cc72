#pragma once

#include <pybind11/pybind11.h>

namespace orb::python {

// Defines run_worker (a Python worker's main loop) and ActorExit in the module.
void DefineWorker(pybind11::module_& m);

// Whether this process is a worker (run_worker serves its tasks), not a driver.
bool IsWorkerProcess();

}  // namespace orb::python
