// Base of all layers. A layer owns its activation and delta buffers (in backend memory), knows
// its sources, and implements forward and backward through the Backend only. The Network wires
// layers together and runs them in topological order.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/device_array.h"
#include "config/network_spec.h"
#include "core/profiler.h"
#include "core/random.h"
#include "distributed/communicator.h"
#include "io/network_file.h"
#include "layers/parameter.h"

namespace nn {

// What a layer needs to know about the current step.
struct LayerContext {
  Backend& backend;
  uint32_t rows;  // examples in this minibatch (the last one may be short)
  bool training;  // dropout and denoising only in training
  uint64_t seed;  // run seed
  uint64_t step;  // update counter; varies the dropout masks from batch to batch
  // Data parallelism: position of this process's first row in the global minibatch. Dropout
  // masks are drawn for global positions, so N processes draw what one process would.
  uint64_t row_offset = 0;
  // Data parallelism: the ranks sharing this minibatch (batch normalisation reduces its
  // statistics over them); null or one rank otherwise.
  Communicator* comm = nullptr;
  // Rows of the whole (global) minibatch, over every rank; 0 means `rows` (one process).
  // Model-parallel layers compute every row of it for their slice of the units.
  uint32_t global_rows = 0;
  uint32_t all_rows() const { return global_rows ? global_rows : rows; }
  // Training step whose loss applies the output layers' activations itself
  // (Backend::activate_loss_accumulate): output layers with Layer::activation_deferrable() stop
  // at z in activations() and the loss turns it into a. Set by the trainer only.
  bool defer_output_activation = false;
  // Times the passes per layer (nn-train --profile; core/profiler.h); null: not profiled.
  Profiler* profiler = nullptr;
};

// Model parallelism (model/parallel_plan.h): a layer whose units are split over the ranks of
// `comm` holds units [first, first + count) of its units() (the same rule as rank_rows: sizes
// differ by at most one). Unsharded layers hold everything (first 0, count units()).
struct ShardInfo {
  bool sharded = false;
  int rank = 0, ranks = 1;
  uint32_t first = 0, count = 0;
  Communicator* comm = nullptr;
};
// Units [floor(units * rank / ranks), floor(units * (rank + 1) / ranks)) as {first, count}.
std::pair<uint32_t, uint32_t> unit_range(uint32_t units, int rank, int ranks);

// The dropout stream of layer `layer_index` (`width` values per row) for this step's rows.
inline uint64_t dropout_stream(const LayerContext& ctx, uint32_t layer_index, size_t width) {
  return shift_stream(ctx.step * 4096 + layer_index, ctx.row_offset * uint64_t(width));
}

ActivationParams activation_params(const LayerSpec& spec);

class Layer {
 public:
  Layer(const LayerSpec& spec, uint32_t index);
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const LayerSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  LayerKind kind() const { return spec_.kind; }
  uint32_t index() const { return index_; }
  uint32_t units() const { return static_cast<uint32_t>(spec_.units()); }

  // Model parallelism: set by the Network before build() on layers that support it.
  virtual bool can_shard(std::string* why_not) const;
  void set_shard(const ShardInfo& s) { shard_ = s; }
  const ShardInfo& shard() const { return shard_; }
  bool sharded() const { return shard_.sharded; }
  // Units this process holds (units() unless sharded).
  uint32_t local_units() const { return shard_.sharded ? shard_.count : units(); }

  // ---- padded rows (Backend::row_alignment; docs/performance.md, "Padded rows") ---------------
  // Whether the layer can hold its activations, deltas and weights with rows padded past its
  // units, so that each row starts aligned for the dense products; why not in *why_not. Only a
  // whole fully connected layer whose every use knows the padding can; the Network also asks
  // that no other layer read or share it.
  virtual bool can_pad_rows(std::string* why_not) const;
  // Set by the Network before build(): rows of `stride` floats (> units()); 0 or units(): none.
  void set_row_stride(uint32_t stride) { stride_ = stride > units() ? stride : 0; }
  bool padded() const { return stride_ != 0; }
  // Distance in floats between the rows of activations() and delta() of an unsplit layer:
  // units(), or the padded stride. The columns past the units hold 0 in delta() (so no
  // gradient reaches the padding) and are never read in activations(). (A layer split over
  // processes is never padded; its buffers are laid out as layers/fully_connected_layer.h says.)
  uint32_t stride() const { return stride_ ? stride_ : units(); }
  // The row_stride of kernel parameters (ActivationParams, LossParams) over this layer's rows:
  // 0 where they are not padded.
  uint32_t kernel_row_stride() const { return stride_; }
  // activation_params(spec()) over this layer's rows: with their row stride where padded.
  ActivationParams kernel_activation() const {
    ActivationParams p = activation_params(spec_);
    p.row_stride = stride_;
    return p;
  }
  // The first `rows` rows of activations(), `width` values each (units(), or a split layer's
  // count where its buffer holds that), into host memory, the padding left out.
  void download_activations(Backend& backend, uint32_t rows, uint32_t width, float* host) const;
  // Consumers of this layer that are sharded read the whole minibatch (all ranks' rows) of it;
  // set by the Network. Input layers then hold the whole batch (HostBatch of every row).
  void set_feeds_sharded(bool v) { feeds_sharded_ = v; }
  bool feeds_sharded() const { return feeds_sharded_; }
  // Largest global minibatch (model-parallel layers size their buffers for it); set by the
  // Network before allocate().
  void set_max_global_rows(uint32_t rows) { max_global_rows_ = rows; }

  void add_source(Layer* l) { sources_.push_back(l); }
  void add_skip(Layer* l) { skips_.push_back(l); }
  const std::vector<Layer*>& sources() const { return sources_; }
  const std::vector<Layer*>& skips() const { return skips_; }

  // ---- lifecycle (called by Network) -------------------------------------------------------
  // Creates parameters once sources and skips are wired. Throws ConfigError naming the layer.
  virtual void build(Backend& backend) {}
  // Random initialisation of parameters: every weight from a counter keyed by the seed and its
  // position in the whole layer (core/random.h), whatever the sharding.
  virtual void initialize(uint64_t seed) {}
  // Appends this layer's weights (DSSTNE order: one per source) and extra arrays to `file`.
  virtual void save(NetworkFile& file) const {}
  // Loads this layer's weights from file.weights[cursor...] (advancing cursor) and extra arrays.
  virtual void load(const NetworkFile& file, size_t& cursor) {}
  // Allocates buffers for up to max_rows examples per batch.
  virtual void allocate(Backend& backend, uint32_t max_rows);

  // The layer's output as seen by consumers: dense activations [rows][units], or (sparse input
  // layers only) a CSR view.
  virtual bool has_sparse_output() const { return false; }
  virtual const SparseView& sparse_output() const;
  const float* activations() const { return a_.data(); }
  float* activations() { return a_.data(); }

  // dE/da accumulated by consumers during backward (dE/dz for output layers, written by the
  // loss). Null for layers that need no gradient (inputs).
  float* delta() { return delta_.data(); }
  virtual bool needs_delta() const { return true; }

  virtual void forward(const LayerContext& ctx) = 0;
  virtual void backward(const LayerContext& ctx) = 0;
  virtual std::vector<Parameter*> parameters() { return {}; }
  // Every array a forward pass in inference reads besides activations: the parameters' values
  // and, where a layer has them, statistics such as batch normalisation's running mean and
  // variance. Network::share_weights_of() makes one network's arrays views of another's.
  virtual std::vector<DeviceArray<float>*> inference_arrays() {
    std::vector<DeviceArray<float>*> out;
    for (Parameter* p : parameters()) out.push_back(&p->value);
    return out;
  }

  // ---- a loss term of the layer's own ---------------------------------------------------------
  // The term a layer adds to the objective besides the sparseness penalty (a Variational layer's
  // weighted KL divergence; nothing for the others), on the activations of the forward pass of
  // `ctx`, summed over the batch like the losses, added into *sum (a double in the backend's
  // memory). The layer's backward() adds the term's derivative.
  virtual void accumulate_own_loss(const LayerContext& ctx, double* sum) {}

  // ---- fused output activation ---------------------------------------------------------------
  // True when forward() ends with Backend::activate over activations() (and nothing after it),
  // so the activation can be left to the loss.
  virtual bool ends_with_activate() const { return false; }
  // Set by the Network on output layers whose activations nothing reads between the forward
  // pass and the loss (no layer takes them as a source or skip): with
  // LayerContext::defer_output_activation their forward() leaves z in activations().
  void set_activation_deferrable(bool v) { activation_deferrable_ = v; }
  bool activation_deferrable() const { return activation_deferrable_; }

  // ---- sparseness penalty (Hidden layers marked Sparse; set by the Network) ------------------
  // One implementation for every layer type: the penalty is a function of the activations a_
  // alone, like a loss on a hidden layer. Effective p/beta (the layer's, else the network's);
  // beta 0 = off.
  void set_sparseness_penalty(float p, float beta);
  bool has_sparseness_penalty() const { return penalty_beta_ > 0.0f; }
  // The penalty on the current activations, summed over the batch like losses (0 when off).
  double sparseness_penalty(Backend& backend, uint32_t rows) const;
  // The same penalty added into *sum, a double in the backend's memory (nothing when off).
  void accumulate_sparseness_penalty(Backend& backend, uint32_t rows, double* sum) const;
  // Adds the penalty's derivative to delta() (dE/da); no-op when off. The Network calls it once
  // every consumer has added its part and before this layer's backward(), which is where
  // DSSTNE adds it (before the activation derivative and dropout's backward).
  void add_sparseness_penalty_delta(Backend& backend, uint32_t rows);

 protected:
  LayerSpec spec_;
  uint32_t index_;
  std::vector<Layer*> sources_, skips_;
  DeviceArray<float> a_;            // activations (after dropout in training)
  DeviceArray<float> pre_dropout_;  // activations before dropout (only when pDropout > 0)
  DeviceArray<float> delta_;
  float penalty_p_ = 0.0f, penalty_beta_ = 0.0f;
  ShardInfo shard_;
  bool feeds_sharded_ = false;
  bool activation_deferrable_ = false;
  uint32_t max_global_rows_ = 0;
  uint32_t stride_ = 0;  // padded rows: their stride (> units()); 0: unpadded
};

}  // namespace nn
