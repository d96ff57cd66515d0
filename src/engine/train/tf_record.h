// TensorFlow's record framing (TFRecord), the container of TensorBoard's event files: each record
// is its length (8 bytes, little-endian), the masked CRC-32C of those 8 bytes, the payload, and
// the masked CRC-32C of the payload (4 bytes each, little-endian). A mask rotates the CRC right
// by 15 bits and adds 0xA282EAD8, so a CRC over bytes that hold CRCs does not degenerate.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nn {

// The masked form of a CRC-32C as the framing stores it.
uint32_t mask_crc32c(uint32_t crc);

// `payload` framed as one record (payload.size() + 16 bytes).
std::string frame_record(std::string_view payload);

// The records at the start of a file's bytes, up to the first one that is cut short or fails a
// check (a writer killed mid-record leaves such a tail; readers stop there too).
struct RecordScan {
  std::vector<std::string_view> payloads;  // views into the scanned bytes
  std::vector<uint64_t> ends;              // the byte offset just past each record
  uint64_t valid_bytes = 0;                // where the last whole record ends
};
RecordScan scan_records(std::string_view bytes);

}  // namespace nn
