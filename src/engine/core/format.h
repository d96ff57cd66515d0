// printf-style formatting into a std::string, for log lines and tables.
#pragma once

#include <cstdio>
#include <string>

namespace nn {

// The text printf would write for `fmt` and `args`, cut at 511 characters (log lines are short).
template <typename... Args>
std::string format(const char* fmt, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

}  // namespace nn
