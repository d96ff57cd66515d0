// Benchmark (not a test): gather_sparse on ML-20M-shaped minibatches (256 examples x 144
// entries from 4096 rows, 27,392 features), 2000 batches; prints the wall time. Was a timing
// assertion in the unit tests (GatherSparse.LargeBatchIsFast, < 2 s), which fails under load and
// under sanitizers. Built by CMake, run by scripts/bench_gather.sh.
#include <chrono>
#include <cstdio>
#include <vector>

#include "data/batch.h"
#include "data/dataset.h"

int main() {
  nn::ExampleSet ds;
  ds.name = "ml";
  ds.width = 27392;
  ds.attributes = nn::attr::Sparse | nn::attr::Boolean;
  ds.type = nn::DataType::UInt;
  ds.examples = ds.unique_examples = 4096;
  for (uint64_t i = 0; i < 4096; ++i) {
    ds.sparse_start.push_back(ds.sparse_index.size());
    for (uint32_t k = 0; k < 144; ++k) ds.sparse_index.push_back((i * 131 + k * 17) % 27278);
    ds.sparse_end.push_back(ds.sparse_index.size());
  }
  std::vector<uint32_t> ids(256);
  nn::SparseBatch b;
  double best = 1e30;
  for (int run = 0; run < 3; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t total = 0;
    for (int batch = 0; batch < 2000; ++batch) {
      for (uint32_t i = 0; i < 256; ++i) ids[i] = (batch * 256 + i * 7) % 4096;
      nn::gather_sparse(ds, ids.data(), 256, b);
      total += b.nnz();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (total != 2000ull * 256 * 144) {
      std::fprintf(stderr, "bench_gather: wrong entry count %llu\n", (unsigned long long)total);
      return 1;
    }
    if (s < best) best = s;
  }
  std::printf("bench_gather: 2000 sparse batches of 256 x 144, best of 3: %.3f s\n", best);
  return 0;
}
