// The CUDA module's one exported function (backend/cuda_module.h): the table through which the
// engine reaches the CUDA backend, its device probes and the NCCL communicator. Compiled only into
// libnn_cuda.so, with backend/cuda/ and distributed/nccl/.
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_factory.h"
#include "backend/cuda_module.h"
#include "backend/cuda_module_fingerprint.h"
#include "core/allocation_context.h"
#include "core/error.h"
#ifdef NN_HAVE_NCCL
#include "distributed/nccl/nccl_communicator.h"
#endif

namespace nn {
namespace {

int device_of(const Backend& backend) {
  auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  return cuda ? cuda->device() : -1;
}

std::string gpu_identity(const Backend& backend) {
  auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  if (!cuda) return "";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, cuda->device()) == cudaSuccess)
    return std::string(prop.uuid.bytes, sizeof prop.uuid.bytes);
  cudaGetLastError();
  return "device " + std::to_string(cuda->device());
}

#ifdef NN_HAVE_NCCL
std::unique_ptr<Communicator> make_nccl(Backend& backend, Communicator& host) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (!cuda) throw InternalError("NCCL asked for over a backend that is not CUDA's");
  return std::make_unique<NcclCommunicator>(host, cuda->device(), cuda->stream());
}
#endif

const CudaHost* host = nullptr;

CudaModule make_table() {
  static const std::string fingerprint = cuda_module_fingerprint();
  CudaModule m;
  m.fingerprint = fingerprint.c_str();
  m.device_count = &cuda::device_count;
  m.device_summary = &cuda::device_summary;
  m.smoke_test = &cuda::smoke_test;
  m.cudnn_loadable = &cuda::cudnn_loadable;
  m.make_backend = &make_cuda_backend;
  m.device_of = &device_of;
  m.gpu_identity = &gpu_identity;
#ifdef NN_HAVE_NCCL
  m.make_nccl_communicator = &make_nccl;
#endif
  return m;
}

}  // namespace

const std::string& cuda::host_allocation() {
  return host && host->current_allocation ? host->current_allocation() : current_allocation();
}

}  // namespace nn

extern "C" __attribute__((visibility("default"))) const nn::CudaModule* nn_cuda_module_v1(
    const nn::CudaHost* host) {
  if (host) nn::host = host;
  static const nn::CudaModule table = nn::make_table();
  return &table;
}
