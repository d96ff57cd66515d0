// Plain description of a CDL command file (Train / Predict / Validate / Serve), produced by
// parse_cdl().
// Keys follow DSSTNE's CDL document, including the keys DSSTNE documents but did not parse
// (MiniBatch, PredictionParameters, all optimizers, an array of Data files).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/enums.h"
#include "config/network_spec.h"

namespace nn {

struct TrainingParameters {
  int epochs = 0;  // required for Train
  uint32_t minibatch = 1024;
  float alpha = 0.1f;
  float lambda = 0.001f;   // L2 weight decay
  float lambda1 = 0.0f;    // L1 weight decay
  float mu = 0.9f;         // momentum / RMSProp decay / Adam beta1
  float mu1 = 0.999f;      // Adam beta2
  int alpha_interval = 0;  // 0 => constant learning rate
  float alpha_multiplier = 0.5f;
  OptimizerKind optimizer = OptimizerKind::SGD;
  std::string checkpoint_name = "check";
  int checkpoint_interval = 1;  // epochs between checkpoints; 0 disables
  int checkpoints_kept = 3;     // newest checkpoints kept on disk; 0 = all (our extension)
  std::string results = "network.nc";
  std::optional<bool> shuffle_indices;  // overrides the network's ShuffleIndices when set
  // Held-out validation set (our extension): NetCDF file(s) with datasets named like the
  // training data, evaluated every validation_interval epochs (metric at validation_k); patience
  // evaluations without improvement stop early (0 = never); keep_best keeps the best network.
  std::vector<std::string> validation_data;
  uint32_t validation_interval = 1;
  uint32_t validation_k = 10;
  bool validation_rank_input_items = false;  // rank each example's input items too
  uint32_t patience = 0;
  bool keep_best = true;
  // Stream: read the training data in windows (docs/large-datasets.md); absent: only when the
  // data do not fit the memory budget.
  std::optional<bool> stream;
  std::string solver = "Gradient";  // or "LeastSquares" (train/least_squares.h)
  bool fit_bias = true;             // LeastSquares: solve the biases too (false: held at 0)
  bool zero_diagonal = false;       // LeastSquares: an item never predicts itself (EASE, EDLAE)
  // SparseUpdate (ours; train/row_sparse.h): "Exact", "Dense" or "Lazy" (LazyUpdate true is
  // "Lazy").
  std::string sparse_update = "Exact";
  // Sampling (ours): sampled output training for every Output layer without a "Sampling" key of
  // its own (docs/wide-outputs.md); unset = none.
  std::optional<SamplingSpec> sampling;
  // Profiling (ours; docs/performance.md): the table of time per phase and layer at the end of
  // the run, a Chrome trace file ("" = none) and the steps per epoch it holds (unset: the
  // tool's default).
  bool profile = false;
  std::string trace;
  std::optional<uint32_t> trace_steps;
  // TensorBoard (ours; docs/monitoring.md): the event file's directory ("" = none) and the
  // updates between minibatch records (0 = epochs only).
  std::string tensorboard;
  // Ours (docs/retraining.md): a network file whose arrays start the run, matched by feature name.
  std::string warm_start;
  uint32_t tensorboard_interval = 0;
  // Ours (docs/reliability.md): "Auto" (true) continues from the newest usable checkpoint when
  // there is one and starts afresh otherwise, so a requeued job reruns its command unchanged.
  bool resume = false;
};

struct PredictionParameters {
  uint32_t minibatch = 1024;
  int k = 10;                // recommendations per example
  std::string output;        // recommendations file; "" or "-" => stdout
  std::string filter;        // sample filter file (items to exclude per sample); optional
  std::string input_index;   // feature index of the input dataset (labels); optional
  std::string output_index;  // feature index of the output layer (labels); optional
  std::string sample_index;  // sample index (example names); optional
  std::string layer;         // output layer to score; "" => the (single) output layer
  std::string score_format = "%.3f";
  std::string target;             // dataset file with held-out targets for metrics; optional
  bool rank_input_items = false;  // metrics: rank each example's input items too
  bool remap_index = false;       // match differing indices to the network's items by name
};

// ServeParameters (ours): how nn-serve serves the Network (docs/serving.md). Zero or empty fields
// leave the tool's defaults.
struct ServeParameters {
  std::string input_index;   // item names of requests (needed when the network has none)
  std::string output_index;  // item names of answers (needed when the network has none)
  bool remap_index = false;  // indices differing from the network's items matched by name
  std::string host;          // "" = 127.0.0.1
  int port = -1;             // -1 = 8080; 0 = any free port
  int grpc_port = -1;        // -1 = no gRPC front; 0 = any free port
  std::string grpc_tls_cert, grpc_tls_key;  // PEM files: the gRPC front over TLS
  int threads = 0;
  uint32_t max_batch = 0;
  double max_delay_ms = -1;  // -1 = the tool's default
  uint32_t k = 0;            // default k of a request
  uint32_t max_k = 0;
  uint64_t max_body = 0;  // bytes
  std::string model_name;
};

struct CdlSpec {
  std::string source;  // the .cdl file (for messages and relative paths)
  float version = 0.0f;
  Command command = Command::Train;
  std::string network;            // JSON (Train/Validate) or .nc (Predict)
  std::vector<std::string> data;  // one or more NetCDF dataset files
  std::optional<uint64_t> random_seed;
  std::optional<uint64_t> memory_limit;  // MemoryLimit: bytes, or "8G"; the tool's default else
  // Parallel (ours): the mode of every layer that has no "Parallel" key of its own under
  // mpirun: Auto (the rule decides), Data (split nothing), Model (split every layer that can be).
  ParallelMode parallel = ParallelMode::Auto;
  // Link (ours): the interconnect the Auto rule predicts step times over (a preset name, or a
  // file written by nn-train --measure-link, relative to the command file); "" = the bytes rule.
  std::string link;
  std::string backend;        // Backend: "cpu", "cuda" or "auto"; "" = the tool's flag
  std::optional<int> device;  // Device: CUDA device index; unset = the tool's flag
  // Precision (ours): "FP32" or "BF16" for the dense products; unset = the network's, or the
  // tool's flag (which overrides both).
  std::optional<Precision> precision;
  // ForcePrecision (ours): BF16 even where it measures slower than FP32 on the CPU (the tools'
  // --force-precision; docs/wide-outputs.md, "When BF16 is slower").
  bool force_precision = false;
  TrainingParameters training;
  PredictionParameters prediction;
  ServeParameters serve;
};

}  // namespace nn
