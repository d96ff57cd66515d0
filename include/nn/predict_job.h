// Public API: a prediction run as a whole, the way nn-predict carries it out: a trained network
// scores examples (NetCDF datasets, or text examples converted with the input feature index) in
// minibatches; per example the top K units of a layer, after per-sample filters (items left out,
// or DSSTNE's score multipliers), become recommendation lines "sample<TAB>item,score:...:";
// against a held-out target it measures precision/recall/NDCG at 1..K or, for one class per
// example, accuracy and a confusion matrix; it can dump any layer's activations. Under mpirun
// the ranks split the examples and rank 0 merges their lines and metrics, or, with layers split
// over the ranks (model parallel), every rank runs every example and rank 0 merges the
// candidates: the output equals a single process's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/command_file.h"
#include "nn/log.h"

namespace nn::api {

struct PredictJob {
  std::string network;                  // trained network .nc
  std::vector<std::string> data_files;  // NetCDF datasets to score, or:
  std::string text_input;               // text examples to score (sample<TAB>feature[,value]:...)
  bool text_analog = false;             // keep the text examples' values (default: indicator)
  std::string dataset_base;             // the input dataset is "<base>_input" (optional check)
  std::string input_index;              // labels of input features (needed with text_input)
  std::string output_index;             // labels of output units (lines name items with them)
  std::string sample_index;             // labels of the datasets' examples
  // A network that knows its items (docs/retraining.md) refuses an input or output index that
  // lists them differently; with this set such an index is matched to the network by name (and
  // NetCDF examples whose features are named are re-indexed into the network's order).
  bool remap_index = false;
  std::string filter;                 // items per sample to leave out (text format; a file
                                      // or a directory of them)
  bool filter_multiply = false;       // multiply scores by the filter's values instead
  std::string output = "-";           // recommendation lines; "-" or "": standard output
  bool write_recs = true;             // false: no recommendation lines (dumps, reports only)
  std::string target;                 // NetCDF dataset of held-out items: metrics
  bool classify = false;              // evaluate the target as one class per example
  bool rank_input_items = false;      // with a target: rank each example's input items too
                                      // (default: left out, as nn-train's validation does)
  std::string top_classes;            // also write the lines here (recommendation format)
  std::string layer;                  // layer to score ("" = the output layer)
  std::string dump;                   // dump activations: FILE.nc (a dataset) or text lines
  std::string dump_layer;             // the layer dumped ("" = the scored layer)
  std::string score_format = "%.3f";  // printf conversion, with or without '%' (DSSTNE: 4.3f)
  uint32_t k = 10;                    // results per example (capped at the layer's units)
  uint32_t minibatch = 1024;          // examples per forward pass (capped at the examples)
  // How the ranked layer is scored (docs/wide-outputs.md): "auto" (in column blocks when one
  // minibatch's scores of it would pass 64 MiB), "full" (all its units at once), or a number
  // of columns per block. Blocks give the same rankings and scores with memory for
  // minibatch x block scores instead of minibatch x units.
  std::string score_block = "auto";
  // Dataset files read a segment of examples at a time, results written as each is scored
  // (docs/large-datasets.md, "Streaming prediction"): 1 always, 0 never, -1 (default) only when
  // the examples do not fit the memory budget.
  int stream = -1;
  uint64_t stream_segment = 0;   // examples per segment (rounded up to minibatches); 0: budget
  std::string backend = "auto";  // "cpu", "cuda" or "auto"
  int threads = 0;               // CPU threads; 0 = every CPU this process may use
  int device = -1;               // CUDA device; -1 = this rank's default
  std::string precision;         // dense products: "fp32" or "bf16"; "" = fp32
  // BF16 on a CPU is measured against FP32 first and runs FP32 where it is the slower (a line
  // says so); true keeps BF16 regardless (TrainJob::force_precision).
  bool force_precision = false;
};

// The run a CDL command file (Command "Predict") describes: its Network, Data and
// PredictionParameters (K, Output, Filter, indices, Layer, Target, ScoreFormat, MiniBatch),
// Backend, Device and Precision. An absent Output stays "" (standard output).
PredictJob predict_job(const CommandFile& cdl);

// True for "" and "-": the path that means standard output.
bool is_stdout_path(const std::string& path);
// True when a dump path names a NetCDF file (ends in ".nc").
bool is_netcdf_path(const std::string& path);

struct PredictResult {
  uint64_t examples = 0;  // examples scored
  std::string layer;      // the scored layer
  uint32_t k = 0;         // results per example, after capping
  // Ranking metrics at 1..k (index j - 1) over the examples with targets, when the target was
  // evaluated as rankings.
  uint64_t evaluated = 0;
  std::vector<double> precision, recall, ndcg;
  // Classifier report, when the target was evaluated as classes.
  bool classified = false;
  double top1 = 0, topk = 0;  // accuracy of the first and of the k best classes
};

// Carries out the job: logs what it reads, the plan, a summary and the metrics report to `log`;
// writes the outputs atomically. Under mpirun every rank calls it; the result's numbers are
// complete on rank 0. Throws nn::Error subclasses naming the file, layer or option at fault.
PredictResult run_prediction(const PredictJob& job, const LogSink& log);

}  // namespace nn::api
