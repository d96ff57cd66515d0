// The CUDA backend as a module loaded at run time. Everything that needs the CUDA runtime,
// cuBLAS, cuRAND or NCCL (backend/cuda/, distributed/nccl/) is compiled into one shared object,
// libnn_cuda.so, which the engine opens the first time something asks for CUDA (make_backend
// "cuda" or "auto", the device probes of device_probe.h). Why: a process that never uses a GPU
// then never loads those libraries (they cost ~200 MB of resident memory at start when linked
// in), and a machine without a GPU can build the tools without compiling the CUDA kernels.
//
// The module exports one C function, nn_cuda_module_v1(const CudaHost*), returning the table
// below. Engine and module are compiled from the same tree by the same compiler, so the table
// carries C++ types; a module from another build is refused by its fingerprint (a digest of the
// interface headers, derived at build time: backend/cuda_module_fingerprint.h). The module is
// linked with its own copies of the engine functions it calls, bound to themselves (-Bsymbolic:
// no global object is constructed twice, whatever the program exports); state it must share with
// the program comes through CudaHost.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/conv_params.h"
#include "backend/kernel_params.h"

namespace nn {

class Communicator;

// What the program lends the module.
struct CudaHost {
  // The program's allocation context (core/allocation_context.h), for out-of-memory messages.
  const std::string& (*current_allocation)() = nullptr;
};

struct CudaModule {
  // cuda_module_fingerprint() of the module's build (backend/cuda_module_fingerprint.h).
  const char* fingerprint = nullptr;
  int (*device_count)() noexcept = nullptr;
  std::string (*device_summary)() = nullptr;
  bool (*smoke_test)() noexcept = nullptr;
  bool (*cudnn_loadable)(std::string* why) noexcept = nullptr;
  // The CUDA backend on a valid device index (make_cuda_backend in backend/cuda/cuda_factory.h).
  std::unique_ptr<Backend> (*make_backend)(int device) = nullptr;
  // The CUDA device of a backend of this module, or -1 for any other backend.
  int (*device_of)(const Backend& backend) = nullptr;
  // The physical GPU of a CUDA backend (its UUID bytes), "" for any other backend.
  std::string (*gpu_identity)(const Backend& backend) = nullptr;
  // NCCL over the backend's device and stream, bootstrapped over `host`; null when the module was
  // built without NCCL.
  std::unique_ptr<Communicator> (*make_nccl_communicator)(Backend& backend,
                                                          Communicator& host) = nullptr;
};

// The loaded module, or null with *why (if given) saying why not: this build has no CUDA, the
// module was not built or not found (the places looked in), it failed to load (the loader's
// message), or it is from another build. Loads it on the first call; thread-safe.
const CudaModule* cuda_module(std::string* why = nullptr);
// The file cuda_module() loaded (its real path; "" when none was loaded or it was refused).
std::string cuda_module_path();

// Why cuda_module() refuses a module at `path` whose table carries `module_fingerprint` (null
// when it carries none): "" when it is this program's fingerprint, else "<path> is from another
// build (<its fingerprint>; this program: <ours>); rebuild it with the tools (bash
// scripts/setup.sh nn_cuda)". The whole fingerprints are compared; the message shows each as the
// interface digest's first 16 hex digits, with the sizes too when those differ.
std::string cuda_module_refusal(const char* module_fingerprint, const std::string& path);

// Where cuda_module() looks, in order: $NN_CUDA_MODULE when set (then only there), the directory
// of the program or library holding the engine and its ../lib, the build tree's lib/, the
// install prefix's lib directory, then the loader's own search path (LD_LIBRARY_PATH).
std::vector<std::string> cuda_module_candidates();

}  // namespace nn
