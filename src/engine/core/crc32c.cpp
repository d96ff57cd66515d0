// CRC-32C, a byte at a time from a 256-entry table (see crc32c.h).
#include "core/crc32c.h"

#include <array>

namespace nn {
namespace {

std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}

}  // namespace

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
  static const std::array<uint32_t, 256> table = make_table();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

}  // namespace nn
