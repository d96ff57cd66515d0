// Fuzz harness: network .nc files (model_io/network_file_read.cpp via read_network_file), ours
// and DSSTNE's layout. The bytes become a scratch file because the reader takes a path.
#include <cstdint>

#include "fuzz_support.h"
#include "model_io/network_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nn::fuzz::ScratchFiles files;
  const std::string path = files.add("network.nc", data, size);
  nn::fuzz::expect_clean([&] { (void)nn::read_network_file(path); });
  return 0;
}
