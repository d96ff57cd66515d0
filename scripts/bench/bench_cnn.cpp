// Benchmark: the Fashion-MNIST CNN of scripts/bench_cnn.py trained with our engine on the real
// data (the gzip IDX files, converted in memory the way nn-encode converts them: 8-bit 28x28
// images, normalised to x / 256 - 0.5 on input, and sparse one-hot labels): seconds per epoch
// (wall and CPU) and test accuracy, as one JSON line. Built as nn-bench-cnn;
// scripts/bench_cnn.sh runs it next to PyTorch on the CPU, scripts/gpu-check.sh with --backend
// cuda next to PyTorch on the GPU (on generated images in the same format).
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "backend/backend_choice.h"
#include "backend/cpu/cpu_backend.h"
#include "config/parse.h"
#include "core/error.h"
#include "data/dataset.h"
#include "data/image_corpus.h"
#include "model/binding.h"
#include "model/network.h"
#include "predict/predictor.h"
#include "train/training_loop.h"

using namespace nn;

namespace {

// The datasets nn-encode makes from the IDX files: 8-bit images and sparse one-hot labels.
std::vector<ExampleSet> fashion_mnist(const std::string& dir, const std::string& part,
                                      uint64_t limit) {
  IdxOptions options;
  options.limit = limit;
  const ImageCorpus corpus = read_idx(dir + "/" + part + "-images-idx3-ubyte.gz",
                                      dir + "/" + part + "-labels-idx1-ubyte.gz", options);
  std::vector<uint64_t> ids(corpus.images());
  std::iota(ids.begin(), ids.end(), uint64_t(0));
  return {image_dataset(corpus, ids, "input"), label_dataset(corpus, ids, "output")};
}

double cpu_seconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Same network as scripts/bench_cnn.py.
const char* kNetwork = R"({
  "Name": "fashion-cnn", "ErrorFunction": "CrossEntropy", "ShuffleIndices": true,
  "Layers": [
    {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input"},
    {"Name": "Conv1", "Kind": "Hidden", "Type": "Convolutional", "N": 32, "Kernel": [5, 5],
     "Activation": "RectifiedLinear"},
    {"Name": "Pool1", "Kind": "Hidden", "Type": "Pooling", "Function": "Max", "Kernel": [2, 2],
     "KernelStride": [2, 2]},
    {"Name": "Conv2", "Kind": "Hidden", "Type": "Convolutional", "N": 64, "Kernel": [3, 3],
     "Activation": "RectifiedLinear"},
    {"Name": "Pool2", "Kind": "Hidden", "Type": "Pooling", "Function": "Max", "Kernel": [2, 2],
     "KernelStride": [2, 2]},
    {"Name": "Hidden", "Kind": "Hidden", "N": 128, "Activation": "RectifiedLinear"},
    {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "SoftMax"}
  ]})";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fashion-MNIST CNN training benchmark"};
  std::string data = "/usr/share/datasets/fashion-mnist", conv = "default";
  uint32_t epochs = 1, batch = 64, limit = 0;
  int threads = 2, device = 0;
  float alpha = 1e-3f;
  std::string backend_name = "cpu";
  app.add_option("--data", data, "directory with the gzip IDX files");
  app.add_option("--epochs", epochs);
  app.add_option("--batch", batch);
  app.add_option("--alpha", alpha, "Adam learning rate");
  app.add_option("--threads", threads);
  app.add_option("--limit", limit, "train on the first N examples only");
  app.add_option("--conv", conv, "convolution code on the CPU: default, gemm or dnnl");
  app.add_option("--backend", backend_name, "cpu (default) or cuda");
  app.add_option("--device", device, "CUDA device index");
  CLI11_PARSE(app, argc, argv);
  try {
    const std::vector<ExampleSet> train = fashion_mnist(data, "train", limit);
    const std::vector<ExampleSet> test = fashion_mnist(data, "t10k", 0);
    NetworkSpec spec = parse_network_json(kNetwork, "bench_cnn.json");
    resolve_auto_sizes(spec, train);
    const BoundData bound = bind_datasets(spec, train, true, "fashion-mnist train");
    std::unique_ptr<Backend> backend = make_backend(backend_name, threads, device);
    auto* cpu_backend = dynamic_cast<CpuBackend*>(backend.get());
    if (cpu_backend && conv == "gemm") cpu_backend->set_conv_library(CpuBackend::ConvLibrary::Gemm);
    if (cpu_backend && conv == "dnnl") cpu_backend->set_conv_library(CpuBackend::ConvLibrary::Dnnl);
    Backend& be = *backend;
    Network net(be, spec, bound.sparse_inputs());
    net.initialize(1);

    TrainOptions options;
    options.epochs = epochs;
    options.minibatch = batch;
    options.optimizer.kind = OptimizerKind::Adam;
    options.optimizer.alpha = alpha;
    options.optimizer.mu = 0.9f;
    options.optimizer.mu1 = 0.999f;
    options.progress_seconds = 0;
    TrainingLoop trainer(net, bound, options, null_log());
    const double cpu0 = cpu_seconds();
    const auto reports = trainer.run();
    const double cpu = cpu_seconds() - cpu0;

    const BoundData test_bound = bind_datasets(spec, test, false, "fashion-mnist test");
    Predictor predictor(net, test_bound, 1000);
    uint64_t correct = 0;
    predictor.run("Output", [&](uint64_t first, uint32_t rows, const float* scores) {
      for (uint32_t r = 0; r < rows; ++r) {
        const float* s = scores + size_t(r) * 10;
        uint32_t best = 0;
        for (uint32_t c = 1; c < 10; ++c) best = s[c] > s[best] ? c : best;
        correct += best == test[1].sparse_index[test[1].sparse_start[first + r]];
      }
    });
    std::string seconds;
    for (const auto& r : reports)
      seconds += (seconds.empty() ? "" : ", ") + std::to_string(r.seconds);
    std::printf(
        "{\"engine\": \"nn\", \"backend\": \"%s\", \"conv\": \"%s\", \"threads\": %d, "
        "\"examples\": %llu, "
        "\"epochs\": %u, \"seconds_per_epoch\": [%s], \"cpu_seconds_per_epoch\": %.2f, "
        "\"loss\": %.4f, \"test_accuracy\": %.4f}\n",
        be.name().c_str(),
        !cpu_backend                                                   ? "cudnn"
        : cpu_backend->conv_library() == CpuBackend::ConvLibrary::Dnnl ? "dnnl"
                                                                       : "gemm",
        threads, (unsigned long long)bound.examples, epochs, seconds.c_str(), cpu / epochs,
        reports.empty() ? 0.0 : reports.back().loss, double(correct) / test[0].examples);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nn-bench-cnn: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
