// The precision stage of a run's set-up (nn-train, nn-predict): BF16 products are asked for to go
// faster, but on a CPU with AVX512-BF16 and no AMX oneDNN's BF16 products can run slower than
// OpenBLAS's FP32 ones. So on a CPU backend a BF16 request is measured first: the network's
// widest dense product (z = x W, as its forward pass runs it) in FP32 and in BF16 (the input
// converted, the weights' BF16 copy as the optimizer keeps it). Where BF16 is the slower, the
// run says so with both rates and computes in FP32, unless it was told to keep BF16 anyway
// (--force-precision). GPUs are not measured: their BF16 tensor cores are the faster.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/enums.h"
#include "core/log.h"
#include "distributed/communicator.h"
#include "model/network.h"

namespace nn::api {

// A dense product C[m][n] = A[m][k] B[k][n].
struct ProductShape {
  int m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * m * n * k; }
};

// The dense product of `net` with the most arithmetic for `rows` rows: a fully connected layer
// (n units) over a source that is not a sparse input (k units); m = 0 when there is none (every
// product reads a sparse input or is a convolution, and BF16 changes none of them).
ProductShape widest_dense_product(const Network& net, uint32_t rows);

// GFLOP/s of a product in each precision (0 where not measured).
struct ProductRates {
  double fp32_gflops = 0.0, bf16_gflops = 0.0;
};

// Times `shape` (with fewer columns when it holds more than ~0.5 GFLOP: the rate of a column
// block is the product's) in FP32 through gemm and in BF16 through convert_to_bf16 of A and
// gemm_bf16_ab, each the best of three after a warm-up, interleaved. Leaves the backend's
// precision as it found it. For host-memory backends (it times on the host clock).
ProductRates measure_product_rates(Backend& be, ProductShape shape);

struct PrecisionChoice {
  Precision precision = Precision::FP32;
  bool fell_back = false;          // BF16 asked for, FP32 chosen because it measured faster
  std::vector<std::string> lines;  // what the run logs about it
};

// The decision from the request and the measured rates: BF16 stays when it is not slower than
// FP32, when `forced`, or when nothing was measured (rates of 0: a GPU, or no dense product).
PrecisionChoice choose_precision(Precision asked, bool forced, const ProductRates& rates,
                                 const ProductShape& shape);

using RateMeasure = std::function<ProductRates(Backend&, ProductShape)>;

// The stage: for a BF16 request on a host-memory backend, measures (every rank, the rates
// averaged over the ranks so that all decide alike; collective under mpirun), chooses, sets the
// backend's precision and logs the lines. The backend must already have accepted BF16
// (set_precision refuses where it cannot run, before the model is built). `measure` is
// measure_product_rates but for tests.
PrecisionChoice apply_precision_stage(Precision asked, bool forced, uint32_t rows, Network& net,
                                      Communicator& comm, const LogSink& log,
                                      const RateMeasure& measure = measure_product_rates);

}  // namespace nn::api
