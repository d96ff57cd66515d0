// A network: layers built from a NetworkSpec, wired by sources/skips, run in topological order.
// Output layers may hold their rows padded to the backend's row alignment (plan_row_padding);
// files, the API and the counts never show the padding.
// Holds topology and parameters only; training state lives in TrainingLoop/Optimizer, batches in
// BatchLoader. Converts to and from the NetworkFile form for .nc files and checkpoints.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/network_spec.h"
#include "io/network_file.h"
#include "layers/fully_connected_layer.h"
#include "layers/input_layer.h"
#include "model/parallel_plan.h"

namespace nn {

// Several processes: the ranks of `comm` and what the data/model parallel rule needs
// (model/parallel_plan.h). Without a communicator of more than one rank every layer is whole.
class Network;
struct NetworkParallel {
  Communicator* comm = nullptr;
  ParallelSettings settings;  // ranks is taken from comm
  // Optional: predicted seconds per step of each layer in each mode (per entry of `layers`),
  // for the rule's step 4 (settings.predicted); called on every rank while the network is
  // being built (its layers exist, no arrays yet), and rank 0's figures are used on all.
  std::function<std::vector<ParallelSettings::Predicted>(
      Network& net, const std::vector<LayerCostInput>& layers, const ParallelSettings& settings)>
      predict;
};

class Network {
 public:
  // Builds layers and allocates parameters (uninitialised: call initialize() or load_arrays()).
  // `sparse_inputs` names the input layers fed by sparse datasets. Throws ConfigError for
  // unsupported layer types, cycles, or size mismatches (naming the layer).
  // With `parallel` naming several ranks, the rule picks data or model parallelism per layer
  // (parallel_plan()); model-parallel layers hold their slice only. Every rank must build the
  // same network with the same settings.
  Network(Backend& backend, NetworkSpec spec, const std::map<std::string, bool>& sparse_inputs,
          const NetworkParallel& parallel = {});

  // Random initialisation per each layer's WeightInit (deterministic for `seed`).
  void initialize(uint64_t seed);
  // Copies weights/biases (and optimizer state, if any) from a network file.
  void load_arrays(const NetworkFile& file);
  // Topology, weights and optimizer state in file form (training state left for the caller).
  // With model-parallel layers this is collective (every rank must call it) and only rank 0's
  // file is complete: the slices are gathered there.
  NetworkFile to_file() const;
  // As to_file, but where the backend's memory is the host's the weights and their optimizer
  // state are not copied: the file points at this network's arrays (WeightArrays::weights_run),
  // valid until the network changes. For writing the file at once: saving a large network then
  // needs no second copy of it.
  NetworkFile to_file_view() const;

  // Makes this network's weights, biases and inference statistics views of `owner`'s (built from
  // the same spec): no copy, and this network's own parameter memory, gradients and optimizer
  // state are released. Its activations stay its own, so several such networks can run forward
  // passes over one set of weights at the same time (api::Evaluator). Inference only: training
  // a network that borrows is not supported. `owner` must outlive this network.
  void share_weights_of(Network& owner);

  // Allocates activation/delta buffers for minibatches of up to `rows` examples (this rank's
  // rows; `global_rows`, the whole minibatch over every rank, sizes the model-parallel layers).
  // `unallocated` (optional): a layer that gets no buffers, because nothing reads it and the
  // caller computes it itself in column blocks (predict/blocked_top_k.h); forward() must then be
  // told to skip it.
  void set_max_batch(uint32_t rows, uint32_t global_rows = 0, const Layer* unallocated = nullptr);
  // The data/model choice per fully connected layer (empty for one process).
  const std::vector<LayerChoice>& parallel_plan() const { return plan_; }
  // What the data/model rule needs to know of every layer but the inputs (in order) for a job
  // of `ranks` processes; `layers` (optional) receives the layers themselves.
  std::vector<LayerCostInput> parallel_inputs(int ranks,
                                              std::vector<Layer*>* layers = nullptr) const;
  // True when some layer is split over the ranks (model parallel).
  bool model_parallel() const { return model_parallel_; }
  uint32_t max_batch() const { return max_batch_; }
  // The layer set_max_batch left without buffers (null: none).
  const Layer* unallocated() const { return unallocated_; }

  // Runs every layer's forward pass in order, except `skip` (the layer set_max_batch left
  // unallocated, when there is one).
  void forward(const LayerContext& ctx, const Layer* skip = nullptr);
  // The layers' penalty terms on the current forward pass (of `ctx`): the sparseness penalties
  // and the layers' own loss terms (a Variational layer's KL divergence), summed over the batch
  // like the losses; 0 when no layer has one. Part of the objective that backward()
  // differentiates.
  double penalties(const LayerContext& ctx);
  // The same sum added into *sum, a double in the backend's memory, layer by layer.
  void accumulate_penalties(const LayerContext& ctx, double* sum);
  // Zeroes hidden deltas, then runs backward in reverse order. Output layers' deltas must
  // already hold dE/dz. `after_layer` (optional) is called as each layer's backward finishes,
  // so gradient communication can start while earlier layers still compute.
  // `instead` (optional) is asked first for every layer: when it returns true it has done that
  // layer's backward pass itself (a sampled output layer, train/sampled_output.h).
  void backward(const LayerContext& ctx, const std::function<void(Layer&)>& after_layer = nullptr,
                const std::function<bool(Layer&)>& instead = nullptr);

  const NetworkSpec& spec() const { return spec_; }
  // Input and Output layers without items take the names of the datasets bound to them
  // (model/binding.h, attach_feature_names); they are saved with the network.
  void name_items(const std::vector<ExampleSet>& sets);
  Backend& backend() { return backend_; }
  Layer* find(const std::string& name);
  Layer& layer(const std::string& name);                       // throws ConfigError when absent
  const std::vector<Layer*>& order() const { return order_; }  // topological
  std::vector<InputLayer*> inputs();
  std::vector<Layer*> outputs();
  std::vector<Parameter*> parameters();
  // Parameters as files count them (padded rows left out).
  size_t parameter_count() const;
  // One line per layer whose rows are padded (Backend::row_alignment), for logs and profiles.
  std::vector<std::string> padding_notes() const;

 private:
  // Throws ConfigError when the fully connected weights would not fit the memory budget.
  void check_weight_memory() const;
  // After every layer is built: SharedWeights links and sparseness penalty settings.
  void link_layer_features();
  // Runs the data/model parallel rule and marks the split layers (before build()).
  void plan_parallel(const NetworkParallel& parallel);
  // Pads the rows of the layers that can be padded to the backend's row alignment (before
  // build(); docs/performance.md, "Padded rows"): Output layers that no other layer reads or
  // shares weights with, and whose own can_pad_rows() agrees.
  void plan_row_padding();

  Backend& backend_;
  NetworkSpec spec_;
  std::vector<std::unique_ptr<Layer>> layers_;  // declaration order
  std::vector<Layer*> order_;                   // forward order
  uint32_t max_batch_ = 0, max_global_batch_ = 0;
  const Layer* unallocated_ = nullptr;
  std::vector<LayerChoice> plan_;
  bool model_parallel_ = false;
};

}  // namespace nn
