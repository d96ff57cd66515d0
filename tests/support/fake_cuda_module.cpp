// A stand-in for libnn_cuda.so in the CUDA module's contract tests
// (tests/unit/backend/cuda_module_contract_test.cpp): it exports the module's entry, returning a
// table that holds nothing but a fingerprint: this build's (NN_FAKE_MODULE_STALE=0), or that of
// a build whose backend.h has one more virtual function (=1; the digest comes from
// tests/support/cuda_module_variants.cmake). The engine must refuse the second before it calls
// anything in the table, and accept the first. Plain C++: it builds without CUDA.
#include <string>

#include "backend/cuda_module.h"
#include "backend/cuda_module_fingerprint.h"
#include "nn_test/cuda_module_variants.h"

namespace {

nn::CudaModule make_table() {
#if NN_FAKE_MODULE_STALE
  static const std::string fingerprint =
      nn::cuda_module_fingerprint_of(NN_TEST_STALE_INTERFACE_DIGEST);
#else
  static const std::string fingerprint = nn::cuda_module_fingerprint();
#endif
  nn::CudaModule m;
  m.fingerprint = fingerprint.c_str();
  return m;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const nn::CudaModule* nn_cuda_module_v1(
    const nn::CudaHost*) {
  static const nn::CudaModule table = make_table();
  return &table;
}
