// The public device report (include/nn/process.h, device_report): what this build and machine
// offer for compute, for `nn-train --devices` and the GPU check, which reads the CUDA path table
// from it so that the check never drifts from the binaries it checks.
#include <string>
#include <vector>

#include "backend/cpu/blas_kernels.h"
#include "backend/cuda/device_probe.h"
#include "backend/cuda_module.h"
#include "backend/cuda_paths.h"
#include "distributed/process.h"
#include "nn/process.h"

namespace nn::api {

std::vector<std::string> device_report() {
  std::vector<std::string> lines;
  lines.push_back("cpu: " + std::to_string(nn::default_thread_count()) +
                  " threads, OpenBLAS kernels " + nn::blas_kernels());
  // The module is opened here even without a driver: the report says where it is and whether it
  // belongs to this build.
  std::string why;
  if (cuda_module(&why)) {
    lines.push_back("cuda module: " + cuda_module_path());
    std::string summary = cuda_device_summary();
    size_t start = 0;
    while (start <= summary.size()) {
      const size_t end = summary.find('\n', start);
      const std::string line = summary.substr(start, end - start);
      lines.push_back(line.rfind("cuda:", 0) == 0 ? line : "cuda: " + line);
      if (end == std::string::npos) break;
      start = end + 1;
    }
  } else {
    lines.push_back("cuda: not available: " + why);
  }
  for (const CudaPathInfo& p : cuda_paths())
    lines.push_back(std::string("cuda path: ") + p.name + " " + p.variable + " on=" + p.on +
                    " off=" + p.off + " default=" + (p.on_by_default ? "on" : "off") +
                    " passed=" + (*p.passed ? p.passed : "never"));
  return lines;
}

}  // namespace nn::api
