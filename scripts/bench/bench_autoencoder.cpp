// Benchmark: a MovieLens-20M-shaped sparse autoencoder (27,278 items, ~144 non-zeros per
// example, Zipf-like item popularity) trained with our engine; reports ms per minibatch
// (median after warm-up), achieved GFLOP/s and the machine's gemm GFLOP/s (in the precision of the
// run: --precision fp32 or bf16), as one JSON line.
// Built as nn-bench-autoencoder; run through scripts/bench_autoencoder.sh next to PyTorch.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_choice.h"
#include "config/parse.h"
#include "core/random.h"
#include "data/dataset.h"
#include "model/batch_loader.h"
#include "model/binding.h"
#include "model/network.h"
#include "train/optimizer.h"
#include "train/step.h"

using namespace nn;
using Clock = std::chrono::steady_clock;

static ExampleSet synthetic(const std::string& name, uint32_t items, uint32_t examples,
                            uint32_t nnz, uint64_t seed) {
  // Zipf(1.0)-like popularity via inverse CDF over item ranks.
  std::vector<double> cdf(items);
  double acc = 0;
  for (uint32_t i = 0; i < items; ++i) cdf[i] = (acc += 1.0 / (i + 1.0));
  for (auto& c : cdf) c /= acc;
  Rng rng(seed);
  ExampleSet ds;
  ds.name = name;
  ds.attributes = attr::Sparse | attr::Boolean;
  ds.type = DataType::UInt;
  ds.width = items;
  ds.examples = ds.unique_examples = examples;
  std::vector<uint32_t> row;
  for (uint32_t e = 0; e < examples; ++e) {
    ds.sparse_start.push_back(ds.sparse_index.size());
    row.clear();
    const uint32_t want = std::max<uint32_t>(1, uint32_t(nnz * (0.5 + rng.uniform())));
    while (row.size() < want) {
      uint32_t item =
          uint32_t(std::lower_bound(cdf.begin(), cdf.end(), rng.uniform()) - cdf.begin());
      item = std::min(item, items - 1);
      if (std::find(row.begin(), row.end(), item) == row.end()) row.push_back(item);
    }
    std::sort(row.begin(), row.end());
    ds.sparse_index.insert(ds.sparse_index.end(), row.begin(), row.end());
    ds.sparse_end.push_back(ds.sparse_index.size());
  }
  return ds;
}

static double sgemm_gflops(Backend& be, int n) {
  std::vector<float> h(size_t(n) * n, 0.5f);
  float* a = static_cast<float*>(be.allocate(h.size() * 4));
  float* b = static_cast<float*>(be.allocate(h.size() * 4));
  float* c = static_cast<float*>(be.allocate(h.size() * 4));
  be.upload(a, h.data(), h.size() * 4);
  be.upload(b, h.data(), h.size() * 4);
  be.gemm(false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  be.synchronize();  // the warm-up product is not timed (asynchronous on CUDA)
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    auto t = Clock::now();
    be.gemm(false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    be.synchronize();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t).count());
  }
  be.release(a);
  be.release(b);
  be.release(c);
  return 2.0 * n * double(n) * n / best / 1e9;
}

int main(int argc, char** argv) {
  CLI::App app{"MovieLens-20M-shaped sparse autoencoder benchmark"};
  std::string hidden = "128", optimizer = "RMSProp", backend_name = "cpu", activation = "Sigmoid",
              precision = "fp32";
  uint32_t items = 27278, nnz = 144, batch = 256, batches = 20, warmup = 3;
  int threads = 0, device = 0;
  app.add_option("--hidden", hidden, "hidden layers: 128 or 1024x3 (units[xcount])");
  app.add_option("--items", items);
  app.add_option("--nnz", nnz, "mean non-zeros per example");
  app.add_option("--batch", batch);
  app.add_option("--batches", batches, "timed minibatches");
  app.add_option("--warmup", warmup);
  app.add_option("--optimizer", optimizer, "SGD, RMSProp, Adam, ...");
  app.add_option("--backend", backend_name);
  app.add_option("--threads", threads);
  app.add_option("--precision", precision, "fp32 or bf16 (BF16 products, FP32 accumulation)");
  app.add_option("--device", device, "CUDA device index (--backend cuda or auto)");
  CLI11_PARSE(app, argc, argv);
  try {
    uint32_t units = uint32_t(std::stoul(hidden)), count = 1;
    if (auto x = hidden.find('x'); x != std::string::npos)
      count = uint32_t(std::stoul(hidden.substr(x + 1)));
    std::string layers =
        R"({"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},)";
    for (uint32_t i = 0; i < count; ++i)
      layers += R"({"Name": "H)" + std::to_string(i) + R"(", "Kind": "Hidden", "N": )" +
                std::to_string(units) + R"(, "Activation": ")" + activation + R"("},)";
    layers +=
        R"({"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid"})";
    NetworkSpec spec = parse_network_json(
        R"({"ErrorFunction": "CrossEntropy", "Layers": [)" + layers + "]}", "bench.json");
    const uint32_t examples = batch * (batches + warmup);
    std::vector<ExampleSet> sets{synthetic("input", items, examples, nnz, 1)};
    sets.push_back(sets[0]);
    sets[1].name = "output";
    resolve_auto_sizes(spec, sets);
    BoundData bound = bind_datasets(spec, sets, true, "synthetic");
    auto be = make_backend(backend_name, threads, device);
    be->set_precision(resolve_precision(precision, spec));
    Network net(*be, spec, bound.sparse_inputs());
    net.initialize(1);
    net.set_max_batch(batch);
    OptimizerSettings os;
    std::string lower = optimizer;
    for (auto& c : lower) c = char(std::tolower(c));
    for (OptimizerKind k : {OptimizerKind::SGD, OptimizerKind::Momentum, OptimizerKind::Nesterov,
                            OptimizerKind::AdaGrad, OptimizerKind::AdaDelta, OptimizerKind::RMSProp,
                            OptimizerKind::Adam}) {
      std::string n = to_string(k);
      for (auto& c : n) c = char(std::tolower(c));
      if (n == lower) os.kind = k;
    }
    os.alpha = 0.001f;
    Optimizer opt(*be, os);
    for (Parameter* p : net.parameters()) opt.prepare(*p);
    BatchLoader loader(bound, {}, 1);
    OutputLosses losses(net, bound);
    std::vector<uint32_t> ids(examples);
    std::iota(ids.begin(), ids.end(), 0u);
    std::vector<double> ms;
    uint64_t total_nnz = 0;
    HostBatch hb;
    for (uint32_t b = 0; b < batches + warmup; ++b) {
      auto t = Clock::now();
      loader.assemble(ids.data() + size_t(b) * batch, batch, b + 1, true, hb);
      load_inputs(net, bound, hb);
      LayerContext ctx{*be, batch, true, 1, b + 1};
      net.forward(ctx);
      losses.evaluate(hb, true);
      net.backward(ctx);
      for (Parameter* p : net.parameters()) opt.update(*p, b + 1, os.alpha);
      be->synchronize();
      if (b >= warmup) {
        ms.push_back(1e3 * std::chrono::duration<double>(Clock::now() - t).count());
        total_nnz += hb.sparse[0].nnz();
      }
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    // FLOPs per batch: forward + weight gradient (+ input delta for dense sources), 2 per FMA.
    const double mean_nnz = double(total_nnz) / batches;
    double flops = 0;
    uint32_t prev = items;
    for (uint32_t i = 0; i < count; ++i) {
      flops += (i == 0) ? 2 * 2 * mean_nnz * units : 3 * 2.0 * batch * double(prev) * units;
      prev = units;
    }
    flops += 3 * 2.0 * batch * double(prev) * items;
    const double peak = sgemm_gflops(*be, 2048);
    std::printf(
        "{\"engine\": \"nn\", \"backend\": \"%s\", \"hidden\": \"%s\", \"optimizer\": \"%s\", "
        "\"batch\": %u, \"items\": %u, \"nnz_per_example\": %.1f, \"ms_per_batch\": %.2f, "
        "\"ms_min\": %.2f, \"gflop_per_batch\": %.3f, \"gflops\": %.1f, \"gemm_peak_gflops\": "
        "%.1f, \"precision\": \"%s\"}\n",
        be->name().c_str(), hidden.c_str(), to_string(os.kind), batch, items, mean_nnz / batch,
        median, ms.front(), flops / 1e9, flops / 1e9 / (median / 1e3), peak,
        to_string(be->precision()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nn-bench-autoencoder: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
