// Fuzz harness: network .nc files (io/network_file_read.cpp via read_network_file), ours
// and DSSTNE's layout. The bytes become a scratch file because the reader takes a path.
#include <cstdint>

#include "fuzz_support.h"
#include "io/network_file.h"
#include "netcdf_leak_excuse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nn::fuzz::ScratchFiles files;
  const std::string path = files.add("network.nc", data, size);
  nn::fuzz::excuse_netcdf_descriptor_leaks(data, size);
  nn::fuzz::expect_clean([&] { (void)nn::read_network_file(path); });
  return 0;
}
