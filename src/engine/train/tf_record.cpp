// TFRecord framing (see tf_record.h).
#include "train/tf_record.h"

#include "core/crc32c.h"

namespace nn {
namespace {

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += char((v >> (8 * i)) & 0xFFu);
}

uint64_t get_le(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return v;
}

}  // namespace

uint32_t mask_crc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

std::string frame_record(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 16);
  put_le(out, payload.size(), 8);
  put_le(out, mask_crc32c(crc32c(out.data(), 8)), 4);
  out += payload;
  put_le(out, mask_crc32c(crc32c(payload.data(), payload.size())), 4);
  return out;
}

RecordScan scan_records(std::string_view bytes) {
  RecordScan scan;
  size_t at = 0;
  while (bytes.size() - at >= 12) {
    if (uint32_t(get_le(bytes, at + 8, 4)) != mask_crc32c(crc32c(bytes.data() + at, 8))) break;
    const uint64_t length = get_le(bytes, at, 8);
    // (Compared without adding to `length` first: a damaged length near 2^64 must not wrap.)
    if (length > bytes.size() - at - 12 || bytes.size() - at - 12 - length < 4) break;
    const std::string_view payload = bytes.substr(at + 12, length);
    const uint32_t stored = uint32_t(get_le(bytes, at + 12 + length, 4));
    if (stored != mask_crc32c(crc32c(payload.data(), payload.size()))) break;
    at += 16 + length;
    scan.payloads.push_back(payload);
    scan.ends.push_back(at);
  }
  scan.valid_bytes = at;
  return scan;
}

}  // namespace nn
