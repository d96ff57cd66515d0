// Whether a CPU can run the BF16 products (docs/wide-outputs.md, "BF16 arithmetic") natively:
// they use AVX512-BF16's dot-product instructions through oneDNN, and are refused elsewhere
// rather than emulated (an emulation would be slower than FP32, which defeats the purpose).
// Pure functions of the flags, so the refusal can be tested on any machine.
#pragma once

#include <string>
#include <vector>

namespace nn::cpu {

// The words of the first "flags" line of /proc/cpuinfo's text (empty when there is none).
std::vector<std::string> cpuinfo_flags(const std::string& cpuinfo);

// This machine's flags, from /proc/cpuinfo (empty when it cannot be read).
std::vector<std::string> host_cpu_flags();

// What oneDNN offers here: built in at all, and allowed to use BF16 instructions (its effective
// ISA, which ONEDNN_MAX_CPU_ISA may lower, includes avx512_core_bf16).
struct DnnlBf16 {
  bool built = false;
  bool isa = false;
};
DnnlBf16 dnnl_bf16_support();

// "" when BF16 products can run natively on a CPU with `flags` (as /proc/cpuinfo spells them:
// avx512_bf16 and the AVX-512 subsets it builds on) with `dnnl`; otherwise the message that
// set_precision(BF16) throws, naming what is missing.
std::string bf16_refusal(const std::vector<std::string>& flags, const DnnlBf16& dnnl);

}  // namespace nn::cpu
