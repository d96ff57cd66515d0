// core/memory_budget: size arithmetic, the budget and its messages, --memory-limit parsing.
#include "core/memory_budget.h"

#include <gtest/gtest.h>

#include "core/test_util.h"

namespace nn {
namespace {

TEST(MemoryBudget, CheckedArithmeticRejectsOverflow) {
  EXPECT_EQ(checked_mul(1u << 31, 2).value(), uint64_t(1) << 32);
  EXPECT_FALSE(checked_mul(uint64_t(1) << 32, uint64_t(1) << 32));
  EXPECT_FALSE(checked_add(UINT64_MAX, 1));
}

TEST(MemoryBudget, DefaultIsThisMachinesMemoryAndCanBeSet) {
  EXPECT_GT(default_memory_budget(), uint64_t(64) << 20);
  set_memory_budget(1000);
  EXPECT_EQ(memory_budget(), 1000u);
  EXPECT_EQ(over_budget(1000), "");
  EXPECT_CONTAINS(over_budget(1001), "needs 1001 bytes, more than the memory budget of 1000 bytes");
  EXPECT_CONTAINS(over_budget(std::nullopt), "more than 16 EiB");
  set_memory_budget(0);
  EXPECT_EQ(memory_budget(), default_memory_budget());
}

TEST(MemoryBudget, ParsesSizes) {
  EXPECT_EQ(parse_byte_size("1000").value(), 1000u);
  EXPECT_EQ(parse_byte_size("64k").value(), 65536u);
  EXPECT_EQ(parse_byte_size("512M").value(), uint64_t(512) << 20);
  EXPECT_EQ(parse_byte_size("8G").value(), uint64_t(8) << 30);
  EXPECT_EQ(parse_byte_size("1.5GiB").value(), uint64_t(3) << 29);
  EXPECT_EQ(parse_byte_size("2TB").value(), uint64_t(2) << 40);
  EXPECT_FALSE(parse_byte_size(""));
  EXPECT_FALSE(parse_byte_size("0"));
  EXPECT_FALSE(parse_byte_size("G"));
  EXPECT_FALSE(parse_byte_size("12X"));
  EXPECT_FALSE(parse_byte_size("-5"));
}

TEST(MemoryBudget, FormatsBytes) {
  EXPECT_EQ(format_bytes(512), "512 bytes");
  EXPECT_EQ(format_bytes(uint64_t(3) << 29), "1.5 GiB");
}

}  // namespace
}  // namespace nn
