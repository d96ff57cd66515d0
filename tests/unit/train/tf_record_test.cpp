// train/tf_record: records framed byte for byte as TensorBoard's own writer frames them (the
// expected bytes below were written by tensorboard.summary.writer.record_writer), and a scan
// that stops at a record cut short or damaged.
#include "train/tf_record.h"

#include <gtest/gtest.h>

#include <string>

#include "core/crc32c.h"

namespace nn {
namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

TEST(TfRecord, FramesAsTensorBoardDoes) {
  EXPECT_EQ(hex(frame_record("")), "000000000000000029039807d8ea82a2");
  EXPECT_EQ(hex(frame_record("hello")), "0500000000000000eab2043e68656c6c6fbb1f1c19");
}

TEST(TfRecord, ScanReadsBackEveryRecord) {
  const std::string bytes = frame_record("one") + frame_record("") + frame_record("three");
  const RecordScan scan = scan_records(bytes);
  ASSERT_EQ(scan.payloads.size(), 3u);
  EXPECT_EQ(scan.payloads[0], "one");
  EXPECT_EQ(scan.payloads[1], "");
  EXPECT_EQ(scan.payloads[2], "three");
  EXPECT_EQ(scan.ends[0], 19u);
  EXPECT_EQ(scan.valid_bytes, bytes.size());
}

TEST(TfRecord, ScanStopsAtATornOrDamagedRecord) {
  const std::string good = frame_record("kept");
  const std::string next = frame_record("next record");
  for (size_t cut = 1; cut < next.size(); ++cut) {
    const RecordScan scan = scan_records(good + next.substr(0, cut));
    EXPECT_EQ(scan.payloads.size(), 1u) << "cut at " << cut;
    EXPECT_EQ(scan.valid_bytes, good.size());
  }
  for (size_t at = 0; at < next.size(); ++at) {
    std::string damaged = good + next;
    damaged[good.size() + at] ^= 0x10;
    const RecordScan scan = scan_records(damaged);
    EXPECT_EQ(scan.payloads.size(), 1u) << "byte " << at << " flipped";
  }
  // A length near 2^64 (with a matching CRC of its bytes) does not wrap around.
  std::string huge(8, '\xFF');
  const uint32_t crc = mask_crc32c(crc32c(huge.data(), 8));
  for (int i = 0; i < 4; ++i) huge += char((crc >> (8 * i)) & 0xFFu);
  EXPECT_EQ(scan_records(huge + "some payload bytes").payloads.size(), 0u);
}

}  // namespace
}  // namespace nn
