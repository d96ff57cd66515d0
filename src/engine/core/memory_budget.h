// Sizes read from files and configs are claims, not facts: a 7 KB file may claim 3e9 examples.
// Before anything is allocated for such a size, it is computed with overflow checks
// (checked_mul/checked_add) and compared with the process's memory budget, so a hostile or
// corrupt input ends in an error naming the file, the variable and the size instead of taking
// all the machine's memory. The budget defaults to the memory this process may use (physical
// memory, lowered by a cgroup limit or RLIMIT_AS when set); tools change it with --memory-limit
// and the CDL key MemoryLimit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace nn {

// a * b and a + b, or nullopt when the result does not fit in 64 bits.
inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The budget in bytes (the default until set_memory_budget is called).
uint64_t memory_budget();
// Sets the budget; 0 restores the default.
void set_memory_budget(uint64_t bytes);
// The default: physical memory, or less when a cgroup limit or RLIMIT_AS says so.
uint64_t default_memory_budget();

// "1.5 GiB", "300 MiB", "512 bytes".
std::string format_bytes(uint64_t bytes);

// Parses "8G", "512M", "64k", "1.5GiB", "1000000" (bytes; suffixes k/M/G/T are powers of 1024,
// an optional trailing "B"/"iB" is allowed); nullopt when malformed or 0.
std::optional<uint64_t> parse_byte_size(const std::string& text);

// "" when `bytes` (nullopt: beyond 64 bits) fits the budget, otherwise the end of a message:
// "needs 22.4 GiB, more than the memory budget of 15.6 GiB (raise it with --memory-limit or
// the CDL key MemoryLimit)".
std::string over_budget(std::optional<uint64_t> bytes);

}  // namespace nn
