// The parts of the nnsuite._core module defined outside module.cpp, each adding its functions
// to the module.
#pragma once

#include <pybind11/pybind11.h>

#pragma GCC visibility push(hidden)
namespace nnpy {

// nnsuite.generate and nnsuite.write_datasets (generate_binding.cpp).
void bind_generate(pybind11::module_& m);

}  // namespace nnpy
#pragma GCC visibility pop
