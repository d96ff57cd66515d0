// The forward passes nn-serve runs, timed alone (no HTTP, no batching queue): one Evaluator's
// top 10 for batches of 1 to 256 rows of ~20 items, with the batch-invariant gemm nn-serve uses
// and with OpenBLAS's (ModelOptions::batch_invariant off), so the cost of answering every request
// exactly as alone can be read per batch size. scripts/bench_serve.sh prints it beside the HTTP
// numbers.  Usage: nn-bench-serve-passes network.nc [--threads N] [--seconds S]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "nn/nn.h"

using namespace nn::api;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  CLI::App app{"time nn-serve's forward passes by batch size"};
  std::string network;
  int threads = 1;
  double seconds = 0.3;
  app.add_option("network", network, "trained network .nc")->required();
  app.add_option("--threads", threads, "CPU threads (default 1)");
  app.add_option("--seconds", seconds, "time per measurement (default 0.3)");
  CLI11_PARSE(app, argc, argv);
  std::printf("%-8s %-14s %12s %12s\n", "rows", "gemm", "ms/pass", "us/row");
  for (const bool invariant : {true, false}) {
    ModelOptions mo;
    mo.threads = threads;
    mo.batch_invariant = invariant;
    auto model = Model::load(network, mo);
    const std::string input = model->input_layers().front();
    const uint64_t cols = model->layer(input).units;
    Evaluator ev(model, 256);
    for (uint32_t rows : {1u, 2u, 4u, 8u, 16u, 64u, 256u}) {
      std::vector<uint64_t> ptr{0};
      std::vector<uint32_t> idx;
      for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t j = 0; j < 20; ++j) idx.push_back(uint32_t((r * 37 + j * 101) % cols));
        std::sort(idx.end() - 20, idx.end());
        ptr.push_back(idx.size());
      }
      std::vector<float> val(idx.size(), 1.0f);
      std::vector<uint32_t> ti(rows * 10);
      std::vector<float> ts(rows * 10);
      const CsrInput in{ptr.data(), idx.data(), val.data(), rows, cols};
      ev.top_k(in, 10, "", nullptr, ti.data(), ts.data());  // warm-up: buffers sized
      uint64_t passes = 0;
      const Clock::time_point start = Clock::now();
      double elapsed = 0;
      while (elapsed < seconds) {
        ev.top_k(in, 10, "", nullptr, ti.data(), ts.data());
        ++passes;
        elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      }
      const double ms = elapsed * 1e3 / double(passes);
      std::printf("%-8u %-14s %12.3f %12.1f\n", rows, invariant ? "invariant" : "openblas", ms,
                  ms * 1e3 / rows);
    }
  }
}
