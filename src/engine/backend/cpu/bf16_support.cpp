// The BF16 capability check of the CPU backend (cpu/bf16_support.h).
#include "backend/cpu/bf16_support.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#ifdef NN_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace nn::cpu {

std::vector<std::string> cpuinfo_flags(const std::string& cpuinfo) {
  std::istringstream lines(cpuinfo);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (key != "flags") continue;
    std::vector<std::string> flags;
    std::istringstream words(line.substr(colon + 1));
    for (std::string w; words >> w;) flags.push_back(w);
    return flags;
  }
  return {};
}

std::vector<std::string> host_cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return cpuinfo_flags(text.str());
}

DnnlBf16 dnnl_bf16_support() {
  DnnlBf16 s;
#ifdef NN_HAVE_DNNL
  s.built = true;
  // ISA values are nested bit sets: an ISA includes another when it has all of its bits.
  const auto want = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  s.isa = (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & want) == want;
#endif
  return s;
}

std::string bf16_refusal(const std::vector<std::string>& flags, const DnnlBf16& dnnl) {
  const std::string fix = "; use precision FP32 (--precision fp32, the default)";
  if (!dnnl.built)
    return "BF16 arithmetic needs oneDNN (libdnnl-dev), and this build has none" + fix;
  std::string missing;
  for (const char* f : {"avx512f", "avx512bw", "avx512vl", "avx512_bf16"}) {
    if (std::find(flags.begin(), flags.end(), f) == flags.end())
      missing += (missing.empty() ? "" : ", ") + std::string(f);
  }
  if (!missing.empty())
    return "BF16 arithmetic needs a CPU with native BF16 instructions (AVX512-BF16); this CPU "
           "lacks " +
           missing + fix;
  if (!dnnl.isa)
    return "BF16 arithmetic needs oneDNN's avx512_core_bf16 kernels, which are not available "
           "here (is ONEDNN_MAX_CPU_ISA set lower?)" +
           fix;
  return "";
}

}  // namespace nn::cpu
