// Network .nc files: topology + weights in DSSTNE's attribute layout (docs/file-formats.md,
// "Network files"), so DSSTNE-trained networks load here and ours load in DSSTNE, plus our
// training state (optimizer moments, epoch, step, RNG state) in extra variables DSSTNE ignores.
// This is a plain data form; model::Network converts to and from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/enums.h"
#include "config/network_spec.h"

namespace nn {

// Floats a writer reads in place (not owned).
struct FloatRun {
  const float* data = nullptr;
  size_t size = 0;
  bool empty() const { return size == 0; }
};

struct WeightArrays {
  std::string input_layer, output_layer;
  // DSSTNE's dimensions: FC weights use width = output units, height = input units.
  uint64_t width = 0, height = 1, length = 1, depth = 1, breadth = 1;
  bool shared = false, locked = false, transposed = false;
  std::string source_input_layer, source_output_layer;  // when shared
  float norm = 0.0f;
  std::vector<float> weights;  // [input][output] row-major; empty when shared
  std::vector<float> bias;     // [output units]
  // Optimizer state (ours): 0..2 arrays shaped like weights, and like bias.
  std::vector<std::vector<float>> weight_state;
  std::vector<std::vector<float>> bias_state;
  // Set by Network::to_file_view on a host-memory backend instead of copies in `weights` and
  // `weight_state` (then empty): the network's own arrays, read while the file is written, so
  // that saving a large network needs no second copy of it. Readers never set them.
  FloatRun weights_run;
  std::vector<FloatRun> weight_state_runs;
};

// A vector (or each of a list of vectors) as the run a writer reads.
FloatRun run_of(const std::vector<float>& v);
std::vector<FloatRun> runs_of(const std::vector<std::vector<float>>& vs);

// The weights and their optimizer state as a writer reads them: the runs where set, else the
// vectors.
FloatRun weights_of(const WeightArrays& w);
std::vector<FloatRun> weight_states_of(const WeightArrays& w);

// Per-layer arrays for batch normalisation (DSSTNE's layer<i>_scaleBN etc.).
struct LayerArrays {
  std::string layer;
  std::vector<float> bn_scale, bn_bias, bn_running_mean, bn_running_variance;
  std::vector<std::vector<float>> bn_scale_state, bn_bias_state;  // optimizer state (ours)
};

// Where a training run stands; written with checkpoints so a resumed run continues exactly.
struct TrainingState {
  bool present = false;    // false for files without it (e.g. written by DSSTNE)
  uint64_t epoch = 0;      // epochs completed
  uint64_t step = 0;       // optimizer updates done (Adam's t)
  uint64_t rng_state = 0;  // host RNG (shuffles) after the last completed epoch
  // A run stopped mid-epoch (a signal): the minibatches of epoch `epoch` + 1 already done, and
  // the sum of their errors (the epoch's loss so far). Both 0 at an epoch boundary.
  uint64_t batch = 0;
  double epoch_loss = 0.0;
  uint64_t seed = 0;  // run seed (dropout/denoising streams derive from it)
  OptimizerKind optimizer = OptimizerKind::SGD;
  float alpha = 0.0f;  // current learning rate (after schedule)
  float lambda = 0.0f, lambda1 = 0.0f, mu = 0.0f, mu1 = 0.0f;
  uint32_t minibatch = 0;
  float smoothed_error = 0.0f;  // divergence guard state
};

struct NetworkFile {
  NetworkSpec spec;                   // every layer fully resolved (no "auto" sizes)
  std::vector<WeightArrays> weights;  // creation order: per layer, one per source
  std::vector<LayerArrays> layers;    // only layers with extra arrays
  TrainingState training;
  std::string checkpoint_name = "checkpoint";
  int checkpoint_interval = 0;
  // A request to Layer::save, not stored: set the weights' runs (WeightArrays::weights_run) to
  // arrays in host memory instead of copying them (Network::to_file_view).
  bool borrow_host_arrays = false;
};

// Writes atomically: a temporary file beside `path`, then rename. Throws IoError/DataError.
// `net` is validated first (DataError naming the attribute/variable it would be stored as, and
// nothing touched on disk): layer names unique and resolvable, FC weights width = output units and
// height = input units, array sizes = width*height*length*depth*breadth, bias sizes, shared weights
// consistent with the output layer's SharedWeights, finite values. A non-shared weight may store
// both arrays or neither (DSSTNE then initialises it); optimizer state needs the array it follows.
// Any failure after that leaves no temporary file and the previous file at `path` untouched.
void write_network_file(const std::string& path, const NetworkFile& net);

// Reads a network file written by us or by DSSTNE. Throws IoError when the file cannot be opened,
// DataError naming the file and the missing/invalid attribute or variable otherwise (same checks
// as the writer). The result has spec.source = path, n_auto = false on every layer, and, for
// DSSTNE's files: training.present = false, no optimizer state, network-wide relu_slope/elu_alpha/
// selu_lambda at NetworkSpec's defaults (layers keep their own values), SharedWeights rebuilt from
// the shared weights. A weight whose arrays are absent comes back with both arrays empty.
NetworkFile read_network_file(const std::string& path);

}  // namespace nn
