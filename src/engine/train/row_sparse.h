// Row-sparse updates of the weight matrices fed by sparse input layers.
//
// A sparse input's weight matrix W[items][units] gets a gradient only in the rows of the items
// the minibatch holds (a few thousand of a catalog's million). The dense path zero-fills the whole
// gradient every step and runs the optimizer over every weight and its state; here the gradient is
// held as the touched rows only (Parameter::row_grad), the batch's distinct items are found on the
// loader thread (data/batch.h index_touched), and the optimizer updates those rows alone. Nothing
// per step is O(items).
//
// Which rows the dense update would also have changed decides what "exact" can mean:
//   SGD, AdaGrad (no L1/L2 decay): an untouched row's update is zero, so the row-sparse update
//     is the dense one, bit for bit.
//   Momentum, Nesterov, RMSProp, AdaDelta (no decay): an untouched row's state decays (and with
//     momentum, its weights keep moving); the skipped steps are applied in closed form when the
//     row is next used, at the end of each epoch and before a checkpoint (math::skip_factors),
//     equal to the dense update to float rounding.
//   Adam, or any optimizer with L1/L2 decay: no closed form; the dense update, unless the lazy
//     mode is asked for.
// The lazy mode ("SparseUpdate": "Lazy") updates the touched rows only, always: an untouched
// row's state does not decay and L1/L2 decay reaches only the rows a batch touched (TensorFlow's
// LazyAdam semantics; Adam's bias correction still counts every step).
//
// Scope: one process, or several under mpirun. A data-parallel layer's ranks agree on the union
// of their slices' rows every step and sum the compact gradients over the ranks as those rows,
// not as the whole matrix. A layer split over the ranks (model parallel) reads the whole
// minibatch on every rank: its rows are the whole minibatch's distinct items, each rank updates
// them in its slice of the units, and nothing is summed. A connection that owns its matrix alone
// (no SharedWeights), no WeightNorm (it constrains whole columns). Other matrices keep the dense
// update; the reasons are logged.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/math/optimizer_math.h"
#include "distributed/communicator.h"
#include "layers/input_layer.h"
#include "model/batch_loader.h"
#include "model/network.h"
#include "train/optimizer.h"

namespace nn {

enum class SparseUpdateMode { Exact, Dense, Lazy };
// "Exact", "Dense", "Lazy".
const char* to_string(SparseUpdateMode m);
// From those names (case-insensitive); throws ConfigError naming the choices.
SparseUpdateMode sparse_update_mode(const std::string& name);

// Whether `backend` carries out `mode` row by row: Exact on CUDA only when its row kernels are
// turned on (backend/cuda_paths.h: dense updates give the same values until a GPU run passes
// them); Lazy, asked for by name, everywhere; Dense never.
bool row_sparse_on(const Backend& backend, SparseUpdateMode mode);

class RowSparseUpdates {
 public:
  // The matrices that qualify get row-sparse gradients (their dense gradient's memory is
  // released); null when none does. `notes` receives a line per matrix fed by a sparse input:
  // how it is updated, or why densely. `excluded`: parameters updated elsewhere (a sampled
  // output layer's).
  static std::unique_ptr<RowSparseUpdates> create(
      Network& net, const BoundData& data, Optimizer& optimizer, SparseUpdateMode mode,
      const std::function<bool(const Parameter*)>& excluded, std::vector<std::string>& notes);
  // Gives the matrices their dense gradients back.
  ~RowSparseUpdates();
  RowSparseUpdates(const RowSparseUpdates&) = delete;
  RowSparseUpdates& operator=(const RowSparseUpdates&) = delete;

  // On the loader's thread, one batch at a time: finds the distinct items of the batch's sparse
  // inputs that feed row-sparse matrices: of this rank's rows `batch`, and with split layers of
  // the whole minibatch `whole` (null without them).
  void index(HostBatch& batch, HostBatch* whole);
  // Data parallel, on the training thread before the batch is loaded (collective): the ranks
  // exchange their slices' items and each takes their union as its rows, so every rank's
  // compact gradient, catch-up and update cover the same rows of the minibatch.
  void agree(Communicator& comm, HostBatch& batch);
  // Data parallel, after the backward pass: the compact gradients of every rank summed, this
  // rank's weighted by `weight` (its rows over the global minibatch's; 0: it contributes zeros),
  // through `comm` (host memory; a device backend's rows are staged through the host). `batch`
  // is this rank's indexed slice.
  void reduce(Communicator& comm, float weight, const HostBatch& batch);
  // The matrices updated row by row (their gradients are reduced by reduce(), not by the
  // data-parallel buckets).
  std::vector<const Parameter*> parameters() const;
  // Every row is current after update `step` (the start of an epoch, a resumed run).
  void begin(uint64_t step);
  // Update `step` is next and its inputs are loaded: the batch's rows catch up the steps they
  // skipped since their last update (exact mode, optimizers whose state decays), so the forward
  // pass reads what the dense update would have left there. `whole`: as for index().
  void before_forward(const HostBatch& batch, const HostBatch* whole, uint64_t step);
  // Every row caught up to update `step`, before anything reads whole matrices (validation,
  // checkpoints, the saved network): the end of an epoch, a stop.
  void flush(uint64_t step);
  // Whether some matrix fed by the input layer `input` is updated row by row here.
  bool updates_rows_of(const std::string& input) const;

 private:
  struct Tracked {
    Parameter* p = nullptr;
    size_t slot = 0;  // the input's slot in HostBatch::sparse
    const InputLayer* input = nullptr;
    bool whole = false;  // a split layer's: the whole minibatch's rows
    uint32_t rows = 0, width = 0;
    std::vector<uint32_t> last;  // update after which each row is current, less base_
  };
  RowSparseUpdates(Network& net, Optimizer& optimizer, bool catch_up)
      : net_(net), optimizer_(optimizer), catch_up_(catch_up) {}
  // Factors of `skipped` steps, computed once per count.
  const math::SkipFactors& factors_of(uint32_t skipped);

  Network& net_;
  Optimizer& optimizer_;
  bool catch_up_;
  std::vector<Tracked> tracked_;
  // The batch `t` reads (the whole minibatch for a split layer's matrix) and its input's view.
  static const SparseBatch& batch_of(const Tracked& t, const HostBatch& batch,
                                     const HostBatch* whole);
  static const SparseView& view_of(const Tracked& t);

  std::vector<size_t> slots_, whole_slots_;  // input slots to index: rank's rows, whole batch
  std::vector<std::vector<uint32_t>> marks_, whole_marks_;  // index_touched's scratch, per slot
  std::vector<uint32_t> agree_mark_;                        // agree()'s (the training thread's own)
  std::vector<uint32_t> agree_items_;
  uint64_t base_ = 0;
  std::vector<math::SkipFactors> factor_cache_;
  std::vector<bool> factor_known_;
  std::vector<float> host_factors_;
  DeviceArray<float> factors_;
  std::vector<float> host_rows_;  // reduce()'s staging of a device backend's rows
};

}  // namespace nn
