// Fuzz harness: dataset files in DSSTNE's NetCDF layout (io/netcdf_dataset.cpp via
// read_datasets). The bytes become a scratch file because the reader takes a path (the netCDF
// library sniffs the format: classic, 64-bit offset, CDF-5 or netCDF-4/HDF5). A dataset the
// reader accepts must be safe to use: every example is gathered the way training batches are,
// so a validation gap shows up as a sanitizer report.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "data/batch.h"
#include "fuzz_support.h"
#include "io/netcdf_dataset.h"
#include "netcdf_leak_excuse.h"

namespace {

void gather_all(const nn::ExampleSet& ds) {
  constexpr uint64_t kMaxExamples = 4096, kMaxDenseFloats = 1 << 20;
  const uint64_t examples = std::min<uint64_t>(ds.examples, kMaxExamples);
  std::vector<uint32_t> ids;
  for (uint64_t e = 0; e < examples; ++e) ids.push_back(static_cast<uint32_t>(e));
  constexpr uint32_t kBatch = 64;
  nn::SparseBatch sparse;
  std::vector<float> dense, weights;
  for (uint64_t first = 0; first < examples; first += kBatch) {
    const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(kBatch, examples - first));
    if (ds.is_sparse()) {
      nn::gather_sparse(ds, ids.data() + first, count, sparse);
    } else if (ds.features() * count <= kMaxDenseFloats) {
      dense.assign(ds.features() * count, 0.0f);
      nn::gather_dense(ds, ids.data() + first, count, /*as_input=*/first % 2 == 0, dense.data());
    }
    nn::gather_weights(ds, ids.data() + first, count, weights);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nn::fuzz::ScratchFiles files;
  const std::string path = files.add("dataset.nc", data, size);
  nn::fuzz::excuse_netcdf_descriptor_leaks(data, size);
  nn::fuzz::expect_clean([&] {
    for (const nn::ExampleSet& ds : nn::read_datasets(path)) gather_all(ds);
  });
  return 0;
}
