// The classic netCDF header check that runs before libnetcdf opens a file: valid CDF-5 and
// netCDF-4 files pass, headers whose claims do not fit the file are rejected with a message
// (libnetcdf 4.9 itself segfaults on these; inputs from tests/fuzz/regressions).
#include "io/netcdf_header_check.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/test_util.h"

namespace nn {
namespace {

using test::error_of;

const std::string kFuzz = std::string(NN_SOURCE_DIR) + "/tests/fuzz/";

TEST(NetcdfHeaderCheck, AcceptsValidFiles) {
  check_netcdf_classic_header(kFuzz + "corpus/netcdf_dataset/sparse_indexed.cdf5.nc");
  check_netcdf_classic_header(kFuzz + "corpus/netcdf_dataset/multi_dataset.cdf5.nc");
  check_netcdf_classic_header(kFuzz + "corpus/network_file/adam-cdf5.nc");
  check_netcdf_classic_header(kFuzz + "corpus/netcdf_dataset/sparse_indexed.nc");  // netCDF-4
}

TEST(NetcdfHeaderCheck, RejectsHeadersThatCrashLibnetcdf) {
  for (const char* name :
       {"libnetcdf-negative-size-memcpy-ncx_pad_getn_text", "libnetcdf-heap-overflow-nc_get_NC",
        "libnetcdf-segv-NC_hashmapadd", "libnetcdf-segv-ncx_getn_longlong_int"}) {
    const std::string path = kFuzz + "regressions/netcdf_dataset/" + name;
    const std::string e = error_of<DataError>([&] { check_netcdf_classic_header(path); });
    EXPECT_NE(e.find(path + ": damaged netCDF header: "), std::string::npos) << e;
  }
}

TEST(NetcdfHeaderCheck, NamesTheBadField) {
  // CDF-1: no records, one dimension whose name claims 2^31-1 bytes.
  const std::string path = testing::TempDir() + "nn_header_check_name.nc";
  {
    std::ofstream out(path, std::ios::binary);
    const unsigned char bytes[] = {'C', 'D', 'F', 1, 0,    0,    0,    0,    0,   0, 0, 0x0A,
                                   0,   0,   0,   1, 0x7F, 0xFF, 0xFF, 0xFF, 'x', 0, 0, 0};
    out.write(reinterpret_cast<const char*>(bytes), sizeof bytes);
  }
  const std::string e = error_of<DataError>([&] { check_netcdf_classic_header(path); });
  EXPECT_NE(e.find("dimension name is 2147483647 bytes long (1..256 allowed)"), std::string::npos)
      << e;
  std::remove(path.c_str());
}

TEST(NetcdfHeaderCheck, IgnoresOtherFiles) {
  const std::string path = testing::TempDir() + "nn_header_check_other.nc";
  std::ofstream(path) << "not netCDF at all";
  check_netcdf_classic_header(path);  // libnetcdf reports these itself
  std::remove(path.c_str());
  EXPECT_THROW(check_netcdf_classic_header(path), IoError);
}

}  // namespace
}  // namespace nn
