// The number of CPUs this process may run on: its affinity mask (taskset, cgroups cpusets, an
// MPI launcher's binding), not the machine's core count that hardware_concurrency() reports.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace nn {

inline int available_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
#endif
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? int(n) : 1;
}

// The affinity mask as bits (bit c of word c / 64 set when CPU c is allowed); all of the first
// hardware_concurrency() CPUs where the mask cannot be read.
inline std::vector<uint64_t> cpu_affinity_mask() {
  std::vector<uint64_t> words(16, 0);  // 1024 CPUs, CPU_SETSIZE
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE && c < 1024; ++c)
      if (CPU_ISSET(c, &set)) words[size_t(c) / 64] |= uint64_t(1) << (c % 64);
    return words;
  }
#endif
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned c = 0; c < n && c < 1024; ++c) words[c / 64] |= uint64_t(1) << (c % 64);
  return words;
}

}  // namespace nn
