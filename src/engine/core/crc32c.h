// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TensorFlow's record
// framing (train/tf_record.h), in software: the records it covers are a few hundred bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nn {

// The CRC-32C of `size` bytes at `data`, continuing from `crc` (the CRC of the bytes before them;
// 0 to start). crc32c("123456789") is 0xE3069283.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace nn
