// core/crc32c: the published check values of CRC-32C (the RFC 3720 test vectors), and that a
// CRC continued over pieces equals the CRC of the whole.
#include "core/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace nn {
namespace {

TEST(Crc32c, CheckValues) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  const std::string zeros(32, '\0'), ones(32, '\xFF');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(Crc32c, ContinuesOverPieces) {
  const std::string text = "The quick brown fox jumps over the lazy dog";
  const uint32_t whole = crc32c(text.data(), text.size());
  EXPECT_EQ(crc32c(text.data() + 10, text.size() - 10, crc32c(text.data(), 10)), whole);
}

}  // namespace
}  // namespace nn
