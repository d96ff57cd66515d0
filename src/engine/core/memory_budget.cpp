// The process memory budget and size arithmetic (see memory_budget.h).
#include "core/memory_budget.h"

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>

namespace nn {
namespace {

std::atomic<uint64_t> g_budget{0};  // 0: default

// cgroup v2 (memory.max) or v1 (memory.limit_in_bytes) limit; 0 when none or unreadable.
uint64_t cgroup_limit() {
  for (const char* path :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text == "max") continue;
    try {
      const uint64_t v = std::stoull(text);
      if (v > 0 && v < (uint64_t(1) << 62)) return v;
    } catch (...) {
    }
  }
  return 0;
}

}  // namespace

uint64_t default_memory_budget() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  uint64_t budget = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t(8) << 30;
  const uint64_t cg = cgroup_limit();
  if (cg && cg < budget) budget = cg;
  rlimit rl;
  if (::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < budget)
    budget = rl.rlim_cur;
  return budget;
}

uint64_t memory_budget() {
  const uint64_t b = g_budget.load();
  return b ? b : default_memory_budget();
}

void set_memory_budget(uint64_t bytes) {
  g_budget.store(bytes);
}

std::string format_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double v = double(bytes);
  int u = -1;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

std::optional<uint64_t> parse_byte_size(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) return std::nullopt;
  double value = 0;
  try {
    size_t used = 0;
    value = std::stod(text.substr(0, i), &used);
    if (used != i) return std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
  std::string unit = text.substr(i);
  for (char& c : unit) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'b') unit.pop_back();
  if (unit.size() > 1 && unit.back() == 'i') unit.pop_back();
  double scale = 1;
  if (unit.empty() || unit == "b")
    scale = 1;
  else if (unit == "k")
    scale = 1024.0;
  else if (unit == "m")
    scale = 1024.0 * 1024;
  else if (unit == "g")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "t")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return std::nullopt;
  const double bytes = std::floor(value * scale);
  if (!(bytes >= 1) || bytes >= 1.8e19) return std::nullopt;
  return uint64_t(bytes);
}

std::string over_budget(std::optional<uint64_t> bytes) {
  const uint64_t budget = memory_budget();
  if (bytes && *bytes <= budget) return "";
  return "needs " + (bytes ? format_bytes(*bytes) : std::string("more than 16 EiB")) +
         ", more than the memory budget of " + format_bytes(budget) +
         " (raise it with --memory-limit or the CDL key MemoryLimit)";
}

}  // namespace nn
