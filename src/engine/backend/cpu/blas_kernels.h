// Which kernels OpenBLAS runs on this CPU, and the better choice when it guessed wrong.
//
// Why: OpenBLAS (built with DYNAMIC_ARCH, as Debian builds it) picks its kernels once, when the
// library loads, from the CPU's family and model numbers. A CPU newer than the library (Debian
// 12's OpenBLAS 0.3.21 on an Emerald Rapids Xeon, model 207, measured) is not in its table and
// gets the Prescott (SSE3) kernels: sgemm ran at 33 GFLOP/s there instead of 183 with the
// AVX-512 (SkylakeX) kernels, on 2 cores. The only remedy is the OPENBLAS_CORETYPE variable,
// read at that load, so the tools restart themselves with it (tools/common/tool_main.cpp).
#pragma once

#include <string>

namespace nn {

// The kernels OpenBLAS chose ("Prescott", "Haswell", "SkylakeX", ...).
std::string blas_kernels();

// The OPENBLAS_CORETYPE value whose kernels match this CPU's instruction set ("SkylakeX" with
// AVX-512 F/DQ/BW/VL, "Haswell" with AVX2 and FMA, "Sandybridge" with AVX) when OpenBLAS chose
// kernels of an older instruction set and OPENBLAS_CORETYPE is not set; "" otherwise
// (including kernels it does not know, which are left alone).
std::string blas_kernels_override();

// One line for a training log: the kernels, and how to get better ones when they do not match.
std::string blas_kernels_note();

// blas_kernels_override()'s decision, for tests: the kernels chosen, the CPU's instruction-set
// level (1 SSE, 2 AVX, 3 AVX2 + FMA, 4 AVX-512) and OPENBLAS_CORETYPE (null: unset).
std::string blas_kernels_override(const std::string& chosen, int cpu_level, const char* coretype);

}  // namespace nn
