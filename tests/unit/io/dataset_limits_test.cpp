// Dataset files whose headers claim more than they hold: every claimed size is checked against
// the file's real storage and the memory budget before anything is allocated (the 7 KB file
// that claimed 3e9 examples used to take 23 GB before the kernel killed the reader).
#include <gtest/gtest.h>
#include <netcdf.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "core/error.h"
#include "core/memory_budget.h"
#include "data/data_test_util.h"
#include "io/example_file.h"
#include "io/netcdf_dataset.h"

namespace nn {
namespace {

using test::TempDir;

void ok(int rc) {
  ASSERT_EQ(rc, NC_NOERR) << nc_strerror(rc);
}

// A sparse Boolean dataset file claiming `examples` rows and `entries` non-zeros; the
// variables are written only when `write_data` (else a netCDF-4 file stores nothing for them).
void write_claim(const std::string& path, int format, size_t examples, size_t entries,
                 bool write_data, int deflate = 0) {
  int nc, e, n, start, end, index;
  ok(nc_create(path.c_str(), NC_CLOBBER | format, &nc));
  const unsigned one = 1, attrs = 3, width = 100, type = 0;
  ok(nc_put_att_uint(nc, NC_GLOBAL, "datasets", NC_UINT, 1, &one));
  ok(nc_put_att_text(nc, NC_GLOBAL, "name0", 5, "input"));
  ok(nc_put_att_uint(nc, NC_GLOBAL, "dataType0", NC_UINT, 1, &type));
  ok(nc_put_att_uint(nc, NC_GLOBAL, "attributes0", NC_UINT, 1, &attrs));
  ok(nc_put_att_uint(nc, NC_GLOBAL, "dimensions0", NC_UINT, 1, &one));
  ok(nc_put_att_uint(nc, NC_GLOBAL, "width0", NC_UINT, 1, &width));
  ok(nc_def_dim(nc, "examplesDim0", examples, &e));
  ok(nc_def_dim(nc, "sparseDataDim0", entries, &n));
  const nc_type t = NC_INT;
  ok(nc_def_var(nc, "sparseStart0", t, 1, &e, &start));
  ok(nc_def_var(nc, "sparseEnd0", t, 1, &e, &end));
  ok(nc_def_var(nc, "sparseIndex0", t, 1, &n, &index));
  if (deflate) {
    for (int v : {start, end, index}) ok(nc_def_var_deflate(nc, v, 1, 1, deflate));
  }
  int old;
  ok(nc_set_fill(nc, NC_NOFILL, &old));
  ok(nc_enddef(nc));
  if (write_data) {
    std::vector<int> starts(examples, 0), ends(examples, 0), idx(entries, 0);
    if (examples) ends.back() = int(entries);
    if (examples) ok(nc_put_var_int(nc, start, starts.data()));
    if (examples) ok(nc_put_var_int(nc, end, ends.data()));
    if (entries) ok(nc_put_var_int(nc, index, idx.data()));
  }
  ok(nc_close(nc));
}

template <class Fn>
std::string data_error(Fn fn) {
  try {
    fn();
  } catch (const DataError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "other exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no DataError";
  return "";
}

#define EXPECT_HAS(text, part)                               \
  EXPECT_NE(std::string(text).find(part), std::string::npos) \
      << "missing: " << (part) << "\nin: " << (text)

class BudgetScope {
 public:
  explicit BudgetScope(uint64_t bytes) { set_memory_budget(bytes); }
  ~BudgetScope() { set_memory_budget(0); }
};

TEST(DatasetLimits, BillionsClaimedByATinyFileAreRejectedAgainstTheBudget) {
  TempDir dir;
  const std::string path = dir.file("huge.nc");
  write_claim(path, NC_NETCDF4, 3000000000ull, 3000000000ull, false);
  EXPECT_LT(std::filesystem::file_size(path), 20000u);
  BudgetScope budget(uint64_t(8) << 30);
  const std::string m = data_error([&] { read_datasets(path); });
  EXPECT_HAS(m, path +
                    ": examplesDim0, sparseDataDim0: dataset 0 claims 3000000000 examples and "
                    "3000000000 entries");
  EXPECT_HAS(m, "more than the memory budget of 8.0 GiB");
}

TEST(DatasetLimits, ClaimsBeyondTheStoredBytesAreRejectedWithinTheBudget) {
  TempDir dir;
  const std::string path = dir.file("forged.nc");
  // 300,000 rows declared, none stored: netCDF would hand back fill values.
  write_claim(path, NC_NETCDF4, 300000, 10, false);
  const std::string m = data_error([&] { read_datasets(path); });
  EXPECT_HAS(m, path + ": sparseStart0: claims 300000 values (1.1 MiB), more than the");
  EXPECT_HAS(m, "file can hold");
}

// Reading in ranges (streaming) needs no memory for the whole claim, but a header that claims
// more than the file holds is refused all the same.
TEST(DatasetLimits, RangedReadsRefuseClaimsBeyondTheStoredBytes) {
  TempDir dir;
  const std::string path = dir.file("forged.nc");
  write_claim(path, NC_NETCDF4, 300000, 10, false);
  const std::string m = data_error([&] { ExampleFile file(path); });
  EXPECT_HAS(m, path + ": sparseStart0: claims 300000 values (1.1 MiB), more than the");
  EXPECT_HAS(m, "file can hold");
  const std::string billions = dir.file("huge.nc");
  write_claim(billions, NC_NETCDF4, 3000000000ull, 3000000000ull, false);
  EXPECT_HAS(data_error([&] { ExampleFile file(billions); }), "file can hold");
}

TEST(DatasetLimits, RangedReadsNeedNoBudgetForTheWholeFile) {
  TempDir dir;
  const std::string path = dir.file("zeros.nc");
  write_claim(path, NC_NETCDF4, 1, 1000000, true, 9);
  BudgetScope budget(1 << 20);  // 1 MiB: the 4 MB of entries do not fit whole
  EXPECT_HAS(data_error([&] { read_datasets(path); }), "more than the memory budget");
  ExampleFile file(path);
  EXPECT_EQ(file.header(0).examples, 1u);
}

TEST(DatasetLimits, TruncatedClassicFileIsRejectedBeforeReading) {
  TempDir dir;
  const std::string path = dir.file("classic.nc");
  write_claim(path, NC_64BIT_DATA, 100000, 100000, true);  // CDF-5: a classic layout
  std::filesystem::resize_file(path, 4096);                // header intact, data gone
  const std::string m = data_error([&] { read_datasets(path); });
  // The classic-header check (data/netcdf_header_check) sees the cut first: a variable whose
  // data would start past the end of the file.
  EXPECT_HAS(m, path + ": damaged netCDF header: variable \"");
  EXPECT_HAS(m, "beyond the end of the file (4096 bytes)");
}

TEST(DatasetLimits, HighlyCompressedRealDataStillReads) {
  TempDir dir;
  const std::string path = dir.file("zeros.nc");
  // 4 MB of zeros in deflated chunks: close to zlib's best ratio, and genuine.
  write_claim(path, NC_NETCDF4, 1, 1000000, true, 9);
  const auto sets = read_datasets(path);
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0].sparse_index.size(), 1000000u);
}

TEST(DatasetLimits, FeatureCountBeyond32BitsIsRejected) {
  TempDir dir;
  const std::string path = dir.file("wide.nc");
  write_claim(path, NC_NETCDF4, 1, 1, true);
  int nc;
  ok(nc_open(path.c_str(), NC_WRITE, &nc));
  const unsigned two = 2, big = 4000000000u;
  ok(nc_redef(nc));
  ok(nc_put_att_uint(nc, NC_GLOBAL, "dimensions0", NC_UINT, 1, &two));
  ok(nc_put_att_uint(nc, NC_GLOBAL, "width0", NC_UINT, 1, &big));
  ok(nc_put_att_uint(nc, NC_GLOBAL, "height0", NC_UINT, 1, &big));
  ok(nc_close(nc));
  EXPECT_HAS(data_error([&] { read_datasets(path); }),
             "width0: width x height x length = 4000000000 x 4000000000 x 1 features; at most "
             "4294967295");
}

// Found by fuzzing: a global heap collection (where netCDF-4 keeps each variable's dimension
// list) whose first object is free space of 0 bytes made libhdf5 1.10 loop forever, so nn-train
// hung on a 6 KB file. The heap is checked before HDF5 reads it.
TEST(DatasetLimits, GlobalHeapThatWouldHangHdf5IsRejected) {
  TempDir dir;
  const std::string path = dir.file("heap.nc");
  write_claim(path, NC_NETCDF4, 3, 3, true);
  ASSERT_EQ(read_datasets(path).size(), 1u);  // intact: reads
  std::string bytes = test::read_file(path);
  const size_t heap = bytes.find(std::string("GCOL\x01\0\0\0", 8));
  ASSERT_NE(heap, std::string::npos);
  // The first object header (index, references, reserved, size) becomes free space of 0 bytes.
  bytes.replace(heap + 16, 16, std::string(16, '\0'));
  test::write_file(path, bytes);
  const std::string m = data_error([&] { read_datasets(path); });
  EXPECT_HAS(m, path + ": damaged HDF5 global heap at byte " + std::to_string(heap) +
                    ": object 0 at byte " + std::to_string(heap + 16) + " claims 0 bytes");
  // An object running past the end of its collection.
  bytes.replace(heap + 16, 16, std::string("\x01\0\x01\0\0\0\0\0\0\0\0\0\0\0\x01\0", 16));
  test::write_file(path, bytes);
  EXPECT_HAS(data_error([&] { read_datasets(path); }),
             "object 1 at byte " + std::to_string(heap + 16) + " claims 281474976710656 bytes");
}

}  // namespace
}  // namespace nn
