// A training run as the tool sees it, whether it came from a CDL file or from DSSTNE-style
// flags, and the function that carries it out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/log.h"
#include "train/gradient_check.h"
#include "train/training_loop.h"

namespace nn::tool {

struct TrainJob {
  std::string network_json;
  std::vector<std::string> data_files;
  TrainOptions options;
  std::optional<bool> shuffle;  // overrides the network's ShuffleIndices
  std::string results;          // final network file; the per-epoch log (<stem>.epochs.jsonl)
                                // and the loss curve (<stem>.curve.png) are written beside it
  std::vector<std::string> validation_files;  // held-out dataset files (empty = none)
  bool resume = false;          // continue from the newest checkpoint, if any
  std::string backend = "auto";
  int threads = 0;
  ParallelMode parallel = ParallelMode::Auto;  // CDL "Parallel": layers without their own key
  int device = 0;               // CUDA device index (--device, CDL Device)
};

// Loads data and network, trains, writes the result atomically. Returns 0.
int run_train_job(const TrainJob& job, const LogSink& log);

// CDL Command "Validate" (or --validate): builds and initialises the network like a training
// run, then checks backward()'s gradients against finite differences on the first minibatch
// (options.minibatch examples). Logs one PASS/FAIL line per weight and bias array; returns 0
// when all pass, 1 otherwise (after printing "nn-train: error: ..." to stderr).
int run_validate_job(const TrainJob& job, const GradientCheckOptions& check, const LogSink& log);

// Newest "<checkpoint_name><epoch>.nc" on disk, or "" when there is none.
std::string newest_checkpoint(const std::string& checkpoint_name, uint64_t* epoch = nullptr);

}  // namespace nn::tool
