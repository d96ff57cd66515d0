// How a training step scales over N ranks, predicted before any machine is rented
// (`nn-train --plan N`, docs/scaling.md "Predicting scaling").
//
// Per layer, for each mode:
//   compute  the layer's floors (train/step_cost.h) on the run's peaks: data parallel, forward,
//            loss and backward of B / N rows and the update of every weight (each rank updates
//            the whole layer); model parallel, every phase of the whole minibatch for units / N.
//            With measurements of a short profiled run on one rank (`measured`), each part's
//            floor is multiplied by the measured / floor ratio that part reached there (the
//            efficiency is taken to be the same on the smaller shapes), and the measured step's
//            rest (data waits, launches, bookkeeping) is added to every step;
//   comm     data parallel: the all-reduce of the layer's weights and biases; model parallel:
//            the source activations' all-gather, the deltas' reduce-scatter, a hidden layer's
//            two exchanges of its activations and deltas with the ranks' rows, a SoftMax output's
//            two all-reduces per row; each an alpha-beta ring collective (model/link_model.h);
//   memory   weights, gradients and optimizer state (a split layer's 1/N), and the activations
//            and deltas of the rows the rank computes.
// The mode of each layer is the one predicted faster (compute + communication), unless the
// layer key "Parallel", the command file or the memory budget decides (model/parallel_plan.h).
// Exposed communication: a model-parallel layer's collectives block its pass; data-parallel
// all-reduces overlap the backward pass of the layers below them (a layer's starts when its
// backward pass ends, one at a time) unless some layer is split, when they run after it as the
// training loop does. Step = compute + exposed communication; epoch = steps x step.
// Not modelled: the loader (overlapped), penalties, kernel launches, load imbalance.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/enums.h"
#include "model/link_model.h"
#include "model/parallel_plan.h"
#include "train/step_cost.h"

namespace nn {

struct ScalingInputs {
  std::vector<LayerShape> shapes;            // every layer (train/step_cost.h layer_shapes)
  std::map<std::string, double> target_nnz;  // sparse targets' non-zeros per row, by layer
  std::vector<LayerCostInput> layers;        // Network::parallel_inputs for the ranks planned
  ParallelSettings settings;                 // ranks, minibatch, optimizer states, budget
  OptimizerKind optimizer = OptimizerKind::SGD;
  bool tensor = false;  // dense products at the tensor peak
  MachinePeaks peaks;
  std::string peaks_source;  // "measured on this machine's cpu backend", "H100 (docs/...)"
  uint64_t examples = 0;     // per epoch
  // Optional: seconds per step of each (phase, layer) measured on one rank with the whole
  // minibatch (the profiler's top-level ranges), the step's measured time, and what they were
  // measured on ("a profiled run of 30 steps on this machine's cpu backend").
  std::map<std::pair<std::string, std::string>, double> measured;
  double measured_step_s = 0.0;
  std::string measured_source;
  // Without `measured`: every part's floor times this (a device not here whose one-rank step
  // was measured elsewhere: that step over its floor); 1 = the floors alone.
  double compute_scale = 1.0;
};

// Devices that are not here, for `--plan-device`: their peaks and where the figures come from.
struct DevicePeaks {
  std::string name;
  MachinePeaks peaks;
  std::string source;
};
const std::vector<DevicePeaks>& device_presets();
// The preset called `name` (case-insensitive); ConfigError listing the names otherwise.
DevicePeaks device_preset(const std::string& name);

// One layer's predicted seconds per step on each rank in each mode.
struct ModeSeconds {
  double data_compute = 0.0, data_comm = 0.0;
  double model_compute = 0.0, model_comm = 0.0;
};
// Per entry of in.layers, over `link` (nothing chosen yet).
std::vector<ModeSeconds> predict_modes(const ScalingInputs& in, const LinkModel& link);

struct LayerScaling {
  std::string layer;
  bool model_parallel = false;                       // the choice
  std::string reason;                                // why
  double compute_s = 0.0;                            // per step on each rank
  double comm_s = 0.0;                               // per step
  double memory_bytes = 0.0;                         // per rank
  double other_compute_s = 0.0, other_comm_s = 0.0;  // the other mode's
};

struct ScalingPlan {
  int ranks = 1;
  LinkModel link;
  std::vector<LayerScaling> layers;
  double exposed_comm_s = 0.0;  // communication not hidden behind compute, per step
  double step_s = 0.0, step_one_s = 0.0;
  double epoch_s = 0.0, epoch_one_s = 0.0;
  double memory_one_bytes = 0.0;  // one rank's memory for the whole network
  double other_s = 0.0;           // measured per step beyond the modelled parts (0: floors)
  std::string limit;              // what limits scaling
};

ScalingPlan plan_scaling(const ScalingInputs& in, const LinkModel& link);
// How the link is named in reasons and reports: "eth-10g (preset)", "link.json (measured)".
std::string describe_link(const LinkModel& link);
// The report `nn-train --plan` prints, one string per line; the last line is
// "predicted epoch: <seconds> s on <N> ranks (1 rank: <seconds> s)".
std::vector<std::string> format_scaling_plan(const ScalingPlan& plan, const ScalingInputs& in);

}  // namespace nn
