// Checksums of the files we write (io/file_checksum.h): every byte of a dataset or network file
// is covered, a damaged one is a DataError naming the file and the variable (or the metadata,
// or the checksum record) before the NetCDF/HDF5 libraries parse anything, and files without a
// checksum (written before it existed, by DSSTNE, by other programs) still load.
#include "io/file_checksum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"
#include "data/data_test_util.h"
#include "io/model_io_test_support.h"
#include "io/netcdf_dataset.h"
#include "io/network_file.h"

namespace nn::test {
namespace {

// The image size a trailer covers (its footer's second field), 0 without a trailer.
uint64_t covered_bytes(const std::string& bytes) {
  if (bytes.size() < 40 || bytes.compare(bytes.size() - 40, 8, "NN-CSUM1") != 0) return 0;
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | uint8_t(bytes[bytes.size() - 32 + size_t(i)]);
  return v;
}

// The message of the DataError `fn` throws ("" and a failure otherwise).
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const DataError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a different exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

#define EXPECT_CONTAINS(text, part)                          \
  EXPECT_NE(std::string(text).find(part), std::string::npos) \
      << "expected to find: " << (part) << "\n                  in: " << (text)

struct TableEntry {
  uint64_t start, length;
  std::string name;
};

// The regions a file's checksum table lists.
std::vector<TableEntry> table_of(const std::string& bytes) {
  auto number = [&](size_t at, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | uint8_t(bytes[at + size_t(i)]);
    return v;
  };
  const size_t foot = bytes.size() - 40;
  std::vector<TableEntry> out;
  size_t at = covered_bytes(bytes);
  for (uint64_t i = 0, n = number(foot + 24, 4); i < n; ++i) {
    const uint64_t name_length = number(at + 20, 2);
    out.push_back({number(at, 8), number(at + 8, 8), bytes.substr(at + 22, name_length)});
    at += 22 + name_length;
  }
  return out;
}

std::string flipped(std::string bytes, size_t at, uint8_t mask = 0x5a) {
  bytes[at] = char(uint8_t(bytes[at]) ^ mask);
  return bytes;
}

std::string dataset_file(const TempDir& dir) {
  const std::string path = dir.file("data.nc");
  write_datasets(path,
                 {make_sparse("input", 64, {{1, 5, 9}, {2}, {63, 0}}, {{1, 2, 3}, {4}, {5, 6}})});
  return path;
}

TEST(FileChecksum, WrittenFilesAreVerified) {
  TempDir dir, scratch;
  EXPECT_EQ(verify_file_checksum(dataset_file(dir)), ChecksumStatus::Verified);
  write_network_file(scratch.file("net.nc"), rich_network_file());
  EXPECT_EQ(verify_file_checksum(scratch.file("net.nc")), ChecksumStatus::Verified);
  const std::string bytes = read_file(dir.file("data.nc"));
  EXPECT_GT(covered_bytes(bytes), 0u);
  EXPECT_LT(covered_bytes(bytes), bytes.size());
}

// Damaged bytes of a dataset file, wherever they are (every 4th byte, and all of the trailer),
// are an error naming the file: no position reaches the NetCDF library, none reads back as data.
TEST(FileChecksum, EveryDamagedByteOfADatasetIsAnErrorNamingTheFile) {
  TempDir dir;
  const std::string good = read_file(dataset_file(dir));
  const std::string bad = dir.file("bad.nc");
  const size_t covered = covered_bytes(good);
  size_t variables = 0, metadata = 0, record = 0, tried = 0;
  // Every 4th byte of the image, then every byte of the trailer from its first.
  for (size_t at = 0; at < good.size(); at = at < covered ? std::min(at + 4, covered) : at + 1) {
    ++tried;
    write_file(bad, flipped(good, at, uint8_t(1 + at % 255)));
    const std::string message = error_of([&] { read_datasets(bad); });
    ASSERT_EQ(message.compare(0, bad.size() + 2, bad + ": "), 0)
        << "byte " << at << ": " << message;
    variables += message.find(": variable '") != std::string::npos;
    metadata += message.find("NetCDF/HDF5 metadata") != std::string::npos;
    record += message.find("checksum record") != std::string::npos;
  }
  EXPECT_GT(variables, 0u);
  EXPECT_GT(metadata, 0u);
  EXPECT_EQ(record, good.size() - covered);  // the trailer's own bytes
  EXPECT_EQ(variables + metadata + record, tried);
}

TEST(FileChecksum, DamagedValuesNameTheVariable) {
  TempDir dir;
  const std::string path = dir.file("net.nc");
  write_network_file(path, rich_network_file());
  const std::string good = read_file(path);
  size_t named = 0;
  for (const TableEntry& r : table_of(good)) {
    if (r.name.empty()) continue;
    ++named;
    write_file(path, flipped(good, r.start + r.length / 2));
    const std::string message = error_of([&] { read_network_file(path); });
    EXPECT_CONTAINS(message, path + ": variable '" + r.name + "': checksum mismatch in its values");
  }
  EXPECT_GE(named, 10u);  // weights, biases, optimizer and batch-norm arrays
}

TEST(FileChecksum, DamagedMetadataAndTrailerAreNamed) {
  TempDir dir;
  const std::string path = dir.file("net.nc");
  write_network_file(path, rich_network_file());
  const std::string good = read_file(path);
  write_file(path, flipped(good, 200));  // attributes of the root group
  EXPECT_CONTAINS(error_of([&] { read_network_file(path); }),
                  "checksum mismatch in the NetCDF/HDF5 metadata");
  write_file(path, flipped(good, good.size() - 3));  // the closing magic number
  EXPECT_CONTAINS(error_of([&] { read_network_file(path); }),
                  "the checksum record at the end of the file is damaged");
  write_file(path, flipped(good, good.size() - 30));  // the covered size
  EXPECT_CONTAINS(error_of([&] { read_network_file(path); }), "checksum record");
}

// Files from before checksums, DSSTNE's and other programs' end with the HDF5 image: read as
// they are. (The trailer removed gives exactly the file this code wrote before it existed.)
TEST(FileChecksum, FilesWithoutChecksumStillLoad) {
  TempDir dir;
  const std::string path = dir.file("net.nc");
  const NetworkFile net = rich_network_file();
  write_network_file(path, net);
  const std::string good = read_file(path);
  write_file(path, good.substr(0, covered_bytes(good)));
  EXPECT_EQ(verify_file_checksum(path), ChecksumStatus::Absent);
  expect_same_network_file(net, read_network_file(path));

  TempDir data_dir;
  const std::string data = dataset_file(data_dir);
  const std::string bytes = read_file(data);
  write_file(data, bytes.substr(0, covered_bytes(bytes)));
  EXPECT_EQ(verify_file_checksum(data), ChecksumStatus::Absent);
  EXPECT_EQ(read_datasets(data).at(0).sparse_index, (std::vector<uint32_t>{1, 5, 9, 2, 63, 0}));
}

// A truncated file loses its trailer and reads as one without: HDF5 reports the truncation.
TEST(FileChecksum, TruncatedFileIsAnError) {
  TempDir dir;
  const std::string path = dir.file("net.nc");
  write_network_file(path, rich_network_file());
  const std::string good = read_file(path);
  write_file(path, good.substr(0, good.size() / 2));
  EXPECT_CONTAINS(error_of([&] { read_network_file(path); }), path);
}

}  // namespace
}  // namespace nn::test
