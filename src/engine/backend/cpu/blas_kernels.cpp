// OpenBLAS's kernel choice against the CPU's instruction set (blas_kernels.h says why).
#include "backend/cpu/blas_kernels.h"

#include <cblas.h>

#include <cstdlib>
#include <map>

namespace nn {
namespace {

// Instruction-set levels, in the order each includes the ones before it.
enum class Isa { Sse = 1, Avx = 2, Avx2 = 3, Avx512 = 4 };

Isa cpu_isa() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return Isa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
  if (__builtin_cpu_supports("avx")) return Isa::Avx;
#endif
  return Isa::Sse;
}

// The instruction set of the x86 kernels OpenBLAS 0.3 names (openblas_get_corename()).
const std::map<std::string, Isa>& kernel_isa() {
  static const std::map<std::string, Isa> table = {
      {"Prescott", Isa::Sse},    {"Core2", Isa::Sse},         {"Penryn", Isa::Sse},
      {"Dunnington", Isa::Sse},  {"Nehalem", Isa::Sse},       {"Atom", Isa::Sse},
      {"Nano", Isa::Sse},        {"Opteron", Isa::Sse},       {"Opteron_SSE3", Isa::Sse},
      {"Barcelona", Isa::Sse},   {"Bobcat", Isa::Sse},        {"Sandybridge", Isa::Avx},
      {"Bulldozer", Isa::Avx},   {"Piledriver", Isa::Avx},    {"Steamroller", Isa::Avx},
      {"Excavator", Isa::Avx},   {"Haswell", Isa::Avx2},      {"Zen", Isa::Avx2},
      {"SkylakeX", Isa::Avx512}, {"Cooperlake", Isa::Avx512}, {"SapphireRapids", Isa::Avx512},
  };
  return table;
}

}  // namespace

std::string blas_kernels() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

std::string blas_kernels_override(const std::string& chosen, int cpu_level, const char* coretype) {
  if (coretype && *coretype) return "";
  const auto known = kernel_isa().find(chosen);
  if (known == kernel_isa().end() || int(known->second) >= cpu_level) return "";
  switch (Isa(cpu_level)) {
    case Isa::Avx512:
      return "SkylakeX";
    case Isa::Avx2:
      return "Haswell";
    case Isa::Avx:
      return "Sandybridge";
    default:
      return "";
  }
}

std::string blas_kernels_override() {
  return blas_kernels_override(blas_kernels(), int(cpu_isa()), std::getenv("OPENBLAS_CORETYPE"));
}

std::string blas_kernels_note() {
  const std::string kernels = blas_kernels(), better = blas_kernels_override();
  std::string note = "cpu backend: OpenBLAS " + kernels + " kernels";
  if (!better.empty())
    note += " (older than this CPU: OPENBLAS_CORETYPE=" + better +
            " gives its own, several times faster; docs/performance.md)";
  return note;
}

}  // namespace nn
