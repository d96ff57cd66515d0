// The fingerprint by which the engine refuses a CUDA module (backend/cuda_module.h) from another
// build. Engine and module pass C++ objects through the module's table, so both must be compiled
// from the same interface headers, with the same layouts. The fingerprint holds:
//  * the interface digest, NN_CUDA_MODULE_INTERFACE_DIGEST: a SHA-256 of the text of every header
//    whose types cross the table (this folder's backend.h, cuda_module.h and parameter structs,
//    distributed/communicator.h, and what they include), derived by the build from the headers
//    themselves (cmake/cuda_module_interface.cmake, into <build>/generated/backend/) whenever one
//    changes. No number has to be raised by hand: a virtual function added to Backend, or members
//    of a struct reordered, change it;
//  * the sizes of the parameter structs and of a few standard types, which catch layouts that
//    change with compiler flags rather than with the text.
// Only the two sides include it: backend/cuda_module.cpp and distributed/cuda/module_entry.cpp.
#pragma once

#include <cstddef>
#include <string>

#include "backend/conv_params.h"
#include "backend/cuda_module_interface.h"  // generated: NN_CUDA_MODULE_INTERFACE_DIGEST
#include "backend/kernel_params.h"

namespace nn {

// Both functions have internal linkage on purpose: each side computes the fingerprint from its
// own compilation (an exported function would be interposed by the program's copy, and a stale
// module would always match).

// The fingerprint of a build whose interface headers hash to `interface_digest`:
// "nn-cuda-module 2 interface <digest> abi <sizes>" (cuda_module_refusal() reads this form).
static inline std::string cuda_module_fingerprint_of(const std::string& interface_digest) {
  constexpr int kFormat = 2;
  const size_t sizes[] = {sizeof(LossParams),   sizeof(OptimizerParams), sizeof(ActivationParams),
                          sizeof(SparseView),   sizeof(TargetView),      sizeof(TopKFilter),
                          sizeof(ConvGeometry), sizeof(BatchNormParams), sizeof(PoolParams),
                          sizeof(LrnParams),    sizeof(std::string),     sizeof(void*)};
  std::string f =
      "nn-cuda-module " + std::to_string(kFormat) + " interface " + interface_digest + " abi";
  for (size_t s : sizes) f += " " + std::to_string(s);
  return f;
}

// This build's fingerprint.
static inline std::string cuda_module_fingerprint() {
  return cuda_module_fingerprint_of(NN_CUDA_MODULE_INTERFACE_DIGEST);
}

}  // namespace nn
