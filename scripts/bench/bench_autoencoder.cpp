// Benchmark: a MovieLens-20M-shaped sparse autoencoder (27,278 items, ~144 non-zeros per
// example, Zipf-like item popularity) trained by nn-train's own training loop (TrainingLoop: the
// next minibatch assembled on the loader thread while the current one trains, the output
// activation fused with the loss, no read-back inside a step, row-sparse input updates). One
// warm-up epoch, then timed epochs of --batches minibatches; ms per minibatch is the median timed
// epoch over its minibatches. Beside it the step's floor (train/step_cost.h: the network's bytes
// and FLOPs over the bandwidth and gemm peak measured on the same backend) and the share of the
// floor reached (on the CPU with the best of three peak measurements); one JSON line (fields in
// docs/performance.md, "Benchmark").
// Built as nn-bench-autoencoder; run through scripts/bench_autoencoder.sh next to PyTorch, and by
// scripts/gpu-check.sh on a GPU.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_choice.h"
#include "backend/cuda_paths.h"
#include "config/enum_names.h"
#include "config/parse.h"
#include "core/error.h"
#include "core/format.h"
#include "core/profiler.h"
#include "core/random.h"
#include "data/dataset.h"
#include "model/binding.h"
#include "model/network.h"
#include "train/optimizer.h"
#include "train/training_loop.h"

using namespace nn;

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

int main(int argc, char** argv) {
  CLI::App app{"MovieLens-20M-shaped sparse autoencoder benchmark: nn-train's training step"};
  std::string hidden = "128", optimizer = "RMSProp", backend_name = "cpu", activation = "Sigmoid",
              precision = "fp32", sparse_update = "Exact";
  uint32_t items = 27278, nnz = 144, batch = 256, batches = 20, epochs = 3;
  uint64_t epoch_examples = 138493;
  int threads = 0, device = 0;
  bool profile = false;
  app.add_option("--hidden", hidden, "hidden layers: 128 or 1024x3 (units[xcount])");
  app.add_option("--items", items);
  app.add_option("--nnz", nnz, "mean non-zeros per example");
  app.add_option("--batch", batch);
  app.add_option("--batches", batches,
                 "minibatches per epoch (the data is batch x batches examples)");
  app.add_option("--epochs", epochs, "timed epochs, after one warm-up epoch (default 3)");
  app.add_option(
      "--epoch-examples", epoch_examples,
      "examples of the epoch that s_per_epoch is given for (default 138,493: ML-20M's users)");
  app.add_option("--optimizer", optimizer, "SGD, RMSProp, Adam, ...");
  app.add_option("--sparse-update", sparse_update,
                 "Exact, Dense or Lazy (nn-train --sparse-update)");
  app.add_option("--backend", backend_name);
  app.add_option("--threads", threads);
  app.add_option("--precision", precision, "fp32 or bf16 (BF16 products, FP32 accumulation)");
  app.add_option("--device", device, "CUDA device index (--backend cuda or auto)");
  app.add_flag("--profile", profile, "print nn-train --profile's table (with floors) to stderr");
  CLI11_PARSE(app, argc, argv);
  try {
    if (batches < 1 || epochs < 1 || batch < 1)
      throw ConfigError("--batch, --batches and --epochs must be >= 1");
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
    const uint32_t examples = batch * batches;
    std::vector<ExampleSet> sets{synthetic("input", items, examples, nnz, 1)};
    sets.push_back(sets[0]);
    sets[1].name = "output";
    resolve_auto_sizes(spec, sets);
    BoundData bound = bind_datasets(spec, sets, true, "synthetic");
    auto be = make_backend(backend_name, threads, device);
    be->set_precision(resolve_precision(precision, spec));
    Network net(*be, spec, bound.sparse_inputs());
    net.initialize(1);

    TrainOptions options;
    options.epochs = 1 + epochs;
    options.minibatch = batch;
    const std::optional<OptimizerKind> kind = enum_from_string<OptimizerKind>(optimizer);
    if (!kind)
      throw ConfigError("--optimizer '" + optimizer + "': expected one of " +
                        enum_choices<OptimizerKind>());
    options.optimizer.kind = *kind;
    options.optimizer.alpha = 0.001f;
    options.seed = 1;
    options.progress_seconds = 1e9;
    options.sparse_update = sparse_update_mode(sparse_update);
    LogSink log =
        profile
            ? LogSink([](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); })
            : null_log();
    TrainingLoop loop(net, bound, options, log);
    std::unique_ptr<Profiler> profiler;
    if (profile) {
      profiler = std::make_unique<Profiler>(be->make_profile_clock());
      loop.set_profiler(profiler.get());
    }
    // On the CPU the floor's peaks are the best of three measurements, one before the timed
    // epochs and two after: a single one read half the machine's speed at times on the shared
    // development VM (the same 1x128 step then came out at 40% and at 62% of its floor, and
    // once above 100%). A device's peaks are steady and measured once.
    const bool best_of_three = be->host_memory();
    const MachinePeaks peaks_before = best_of_three ? loop.step_floor().peaks : MachinePeaks{};
    std::vector<EpochReport> reports = loop.run();
    if (reports.size() != options.epochs) throw Error("training stopped before its last epoch");
    std::vector<double> ms;
    for (size_t e = 1; e < reports.size(); ++e) ms.push_back(1e3 * reports[e].seconds / batches);
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];

    // FLOPs per batch: forward + weight gradient (+ input delta for dense sources), 2 per FMA.
    const double mean_nnz = double(sets[0].nnz()) / examples;
    double flops = 0;
    uint32_t prev = items;
    for (uint32_t i = 0; i < count; ++i) {
      flops += (i == 0) ? 2 * 2 * mean_nnz * batch * units : 3 * 2.0 * batch * double(prev) * units;
      prev = units;
    }
    flops += 3 * 2.0 * batch * double(prev) * items;
    for (const std::string& line : be->path_notes())
      std::fprintf(stderr, "nn-bench-autoencoder: %s\n", line.c_str());
    for (const std::string& line : net.padding_notes())
      std::fprintf(stderr, "nn-bench-autoencoder: %s\n", line.c_str());
    const Layer& output = net.layer("Output");
    StepFloor floor = loop.step_floor();
    const MachinePeaks peaks_after = best_of_three ? loop.step_floor().peaks : MachinePeaks{};
    for (const MachinePeaks& p : {peaks_before, peaks_after}) {
      floor.peaks.fp32_flops = std::max(floor.peaks.fp32_flops, p.fp32_flops);
      floor.peaks.tensor_flops = std::max(floor.peaks.tensor_flops, p.tensor_flops);
      floor.peaks.bytes_per_s = std::max(floor.peaks.bytes_per_s, p.bytes_per_s);
    }
    const double floor_ms = 1e3 * floor.seconds();
    const char* tf32 = std::getenv("NN_CUDA_TF32");
    std::string math = to_string(be->precision());
    for (auto& c : math) c = char(std::tolower(c));
    if (be->name() == "cuda" && tf32 && std::string(tf32) == "1" && math == "fp32") math = "tf32";
    const double batches_per_epoch = std::ceil(double(epoch_examples) / batch);
    // Each epoch's loss (the warm-up's first), so that a variant can be compared with the plain
    // run, and the CUDA paths switched away from their defaults here (backend/cuda_paths.h):
    // opt_in those turned on, paths_off those turned off, all_on whether every path is on; so
    // that its row says what it measured.
    std::string losses, opt_in, paths_off;
    bool all_on = be->name() == "cuda";
    for (const EpochReport& r : reports)
      losses += (losses.empty() ? "" : ", ") + format("%.9g", r.loss);
    auto add = [](std::string& list, const char* name) {
      list += (list.empty() ? "\"" : ", \"") + std::string(name) + "\"";
    };
    if (be->name() == "cuda")
      for (const CudaPathInfo& p : cuda_paths()) {
        const bool on = cuda_path_on(p.path);
        if (!p.on_by_default && on) add(opt_in, p.name);
        if (p.on_by_default && !on) add(paths_off, p.name);
        all_on = all_on && on;
      }
    std::printf(
        "{\"engine\": \"nn\", \"mode\": \"train-step\", \"shape\": \"ml20m-%s\", "
        "\"backend\": \"%s\", \"hidden\": \"%s\", \"optimizer\": \"%s\", "
        "\"sparse_update\": \"%s\", \"batch\": %u, \"items\": %u, \"nnz_per_example\": %.1f, "
        "\"precision\": \"%s\", \"ms_per_batch\": %.3f, \"ms_min\": %.3f, \"s_per_epoch\": "
        "%.3f, \"floor_ms\": %.3f, \"floor_share\": %.3f, \"gflop_per_batch\": %.3f, "
        "\"gflops\": %.1f, \"gemm_peak_gflops\": %.1f, \"bandwidth_gbs\": %.1f, "
        "\"timed_epochs\": %u, \"batches_per_epoch\": %u, \"cuda_graphs\": %s, "
        "\"graph_steps\": %llu, \"padded_rows\": %s, \"output_stride\": %u, \"opt_in\": [%s], "
        "\"paths_off\": [%s], \"all_on\": %s, \"row_sparse\": %s, \"losses\": [%s]}\n",
        hidden.c_str(), be->name().c_str(), hidden.c_str(), to_string(options.optimizer.kind),
        to_string(options.sparse_update), batch, items, mean_nnz, math.c_str(), median, ms.front(),
        median * batches_per_epoch / 1e3, floor_ms, floor_ms / median, flops / 1e9,
        flops / 1e9 / (median / 1e3), floor.peaks.tensor_flops / 1e9, floor.peaks.bytes_per_s / 1e9,
        epochs, batches, loop.graph_steps() > 0 ? "true" : "false",
        static_cast<unsigned long long>(loop.graph_steps()), output.padded() ? "true" : "false",
        output.stride(), opt_in.c_str(), paths_off.c_str(), all_on ? "true" : "false",
        loop.row_sparse_updates() ? "true" : "false", losses.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nn-bench-autoencoder: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
