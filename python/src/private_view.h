#pragma once

#include <pybind11/pybind11.h>

namespace orb::python {

// Defines private_view (copy-on-write views of store memory) in the module.
void DefinePrivateViews(pybind11::module_& m);

}  // namespace orb::python
