// Backend choice for a given network: "auto" must not pick a backend that cannot run it. The CUDA
// backend lacks some kernel families (docs/cuda-backend.md); a network that needs one gets the
// CPU under "auto", with a note saying why, and a clear error under an explicit "cuda".
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "config/network_spec.h"

namespace nn {

// The first feature of `spec` the CUDA backend cannot run yet ("Cosine Pooling layer 'P1'" before
// similarity pooling had CUDA kernels), or "" when it runs every part of it (today: always).
std::string cuda_unsupported_feature(const NetworkSpec& spec);

// The first feature of `spec` that the CUDA backend runs through cuDNN (convolution, LRN, batch
// normalisation), or "". Max / Average pooling are own kernels and need no cuDNN.
std::string cudnn_feature(const NetworkSpec& spec);

// make_backend for `spec`: as make_backend(name, threads, device), except that "auto" picks the
// CPU when the CUDA backend would be chosen but cannot run the network (a kernel family it lacks,
// or cuDNN needed but not loadable); *note (when given) then says so, and is "" otherwise.
std::unique_ptr<Backend> make_backend_for(const NetworkSpec& spec, const std::string& name,
                                          int threads, int device, std::string* note = nullptr);

}  // namespace nn
