// The precision stage: a BF16 request measured against FP32 on the CPU (api/precision_stage.h).
#include "api/precision_stage.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "core/format.h"
#include "layers/layer.h"

namespace nn::api {
namespace {

// About 0.5 GFLOP per timed product: a few milliseconds at the rates of a CPU, so the whole
// measurement (two warm-ups and six timed products) stays well under a second.
constexpr double kProbeFlops = 5e8;

template <typename F>
double seconds_of(const F& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string gflops_text(double g) {
  return format("%.1f", g);
}

}  // namespace

ProductShape widest_dense_product(const Network& net, uint32_t rows) {
  ProductShape best;
  for (const Layer* l : net.order()) {
    if (l->kind() == LayerKind::Input || l->spec().type != LayerType::FullyConnected) continue;
    for (const Layer* src : l->sources()) {
      if (src->has_sparse_output()) continue;
      const ProductShape s{int(rows), int(l->units()), int(src->units())};
      if (s.flops() > best.flops()) best = s;
    }
  }
  return best;
}

ProductRates measure_product_rates(Backend& be, ProductShape shape) {
  ProductRates rates;
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0) return rates;
  // Fewer columns for a big product, in whole 32-column tiles (the BF16 kernels' grain).
  const double columns = kProbeFlops / (2.0 * shape.m * shape.k);
  if (columns < shape.n) shape.n = std::min(shape.n, std::max(32, int(columns) / 32 * 32));
  const size_t a_size = size_t(shape.m) * shape.k, b_size = size_t(shape.k) * shape.n;
  std::vector<float> a(a_size), b(b_size), c(size_t(shape.m) * shape.n);
  // Values of a layer's scale; the products' speed does not depend on them.
  for (size_t i = 0; i < a_size; ++i) a[i] = float(i % 17) * 0.0625f - 0.5f;
  for (size_t i = 0; i < b_size; ++i) b[i] = float(i % 13) * 0.01f - 0.06f;
  std::vector<uint16_t> a16(a_size), b16(b_size);
  be.convert_to_bf16(b.data(), b16.data(), b_size);  // the optimizer's copy of the weights

  const Precision before = be.precision();
  be.set_precision(Precision::FP32);
  auto fp32 = [&] {
    be.gemm(false, false, shape.m, shape.n, shape.k, 1.0f, a.data(), shape.k, b.data(), shape.n,
            0.0f, c.data(), shape.n);
  };
  auto bf16 = [&] {  // as a BF16 forward pass runs it: the input converted, then the product
    be.convert_to_bf16(a.data(), a16.data(), a_size);
    be.gemm_bf16_ab(false, false, shape.m, shape.n, shape.k, 1.0f, a16.data(), shape.k, b16.data(),
                    shape.n, 0.0f, c.data(), shape.n);
  };
  fp32();  // warm-ups: first-use set-up (oneDNN builds its kernels on the first BF16 product)
  bf16();
  double best_fp32 = 1e300, best_bf16 = 1e300;
  for (int i = 0; i < 3; ++i) {
    best_fp32 = std::min(best_fp32, seconds_of(fp32));
    best_bf16 = std::min(best_bf16, seconds_of(bf16));
  }
  be.set_precision(before);
  rates.fp32_gflops = shape.flops() / std::max(best_fp32, 1e-9) / 1e9;
  rates.bf16_gflops = shape.flops() / std::max(best_bf16, 1e-9) / 1e9;
  return rates;
}

PrecisionChoice choose_precision(Precision asked, bool forced, const ProductRates& rates,
                                 const ProductShape& shape) {
  PrecisionChoice out;
  out.precision = asked;
  if (asked != Precision::BF16) return out;
  const std::string kept = "precision: BF16 products with FP32 accumulation and FP32 weights";
  if (rates.fp32_gflops <= 0.0 || rates.bf16_gflops <= 0.0) {
    out.lines.push_back(kept);
    return out;
  }
  const std::string measured = "BF16 " + gflops_text(rates.bf16_gflops) +
                               " GFLOP/s against FP32's " + gflops_text(rates.fp32_gflops) +
                               " on the network's widest dense product, " +
                               format("%d x %d by %d x %d", shape.m, shape.k, shape.k, shape.n);
  if (rates.bf16_gflops >= rates.fp32_gflops) {
    out.lines.push_back(kept + " (" + measured + ")");
  } else if (forced) {
    out.lines.push_back(kept + ", although they are slower than FP32 on this CPU (" + measured +
                        "): kept, as --force-precision asks");
  } else {
    out.precision = Precision::FP32;
    out.fell_back = true;
    out.lines.push_back(
        "warning: BF16 was asked for, but its products are slower than FP32 on this CPU (" +
        measured + "), so this run computes in FP32; --force-precision keeps BF16");
  }
  return out;
}

PrecisionChoice apply_precision_stage(Precision asked, bool forced, uint32_t rows, Network& net,
                                      Communicator& comm, const LogSink& log,
                                      const RateMeasure& measure) {
  Backend& be = net.backend();
  ProductShape shape;
  ProductRates rates;
  if (asked == Precision::BF16 && be.host_memory()) {
    shape = widest_dense_product(net, rows);
    rates = measure(be, shape);
    if (comm.size() > 1) {  // every rank decides on the same numbers
      double sums[2] = {rates.fp32_gflops, rates.bf16_gflops};
      comm.all_reduce_sum(sums, 2);
      rates.fp32_gflops = sums[0] / comm.size();
      rates.bf16_gflops = sums[1] / comm.size();
    }
  }
  PrecisionChoice choice = choose_precision(asked, forced, rates, shape);
  if (asked == Precision::BF16) be.set_precision(choice.precision);
  for (const std::string& line : choice.lines) log(line);
  return choice;
}

}  // namespace nn::api
