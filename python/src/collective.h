#pragma once

#include <pybind11/pybind11.h>

namespace orb::python {

// Defines the collective calls (orb.collective's core) in the module.
void DefineCollective(pybind11::module_& m);

}  // namespace orb::python
