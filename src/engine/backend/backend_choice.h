// Backend choice for a given network: "auto" must not pick a backend that cannot run it. Every
// kernel family has a CUDA implementation, but convolution, LRN and batch normalisation go
// through cuDNN, which is loaded at run time and may be missing: a network that needs it gets
// the CPU under "auto", with a note saying why, and a clear error under an explicit "cuda".
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "config/network_spec.h"

namespace nn {

// The first feature of `spec` that the CUDA backend runs through cuDNN (convolution, LRN, batch
// normalisation), or "". Max / Average pooling are own kernels and need no cuDNN.
std::string cudnn_feature(const NetworkSpec& spec);

// make_backend for `spec`: as make_backend(name, threads, device), except that "auto" picks the
// CPU when the CUDA backend would be chosen but cannot run the network (cuDNN needed but not
// loadable); *note (when given) then says so, and is "" otherwise.
std::unique_ptr<Backend> make_backend_for(const NetworkSpec& spec, const std::string& name,
                                          int threads, int device, std::string* note = nullptr);

// The precision a run uses: `requested` ("fp32" or "bf16", any case: a tool's --precision or a
// CDL's Precision) when not empty, else the network's "Precision" key, else FP32. ConfigError
// for any other name.
Precision resolve_precision(const std::string& requested, const NetworkSpec& spec);

}  // namespace nn
