// The floor of one training step: the arithmetic (FLOPs) and memory traffic (bytes) of every
// layer's forward pass, loss, backward pass and optimizer update, from the network's shapes, and
// the least time a machine of given peaks needs for each (max of FLOPs / peak and bytes /
// bandwidth, phases one after another). A measured step divided by it says how far the code is
// from what the hardware allows (docs/performance.md, "Floors").
//
// What is counted (4-byte floats; B rows, a fully connected layer of `out` units over a source of
// `in` units, k non-zeros per row where the source is a sparse input):
//   forward   2·B·in·out FLOPs (2·B·k·out sparse); reads W (sparse: the rows the batch touches,
//             at most B·k), the source's activations (sparse: B·k index/value pairs) and the bias,
//             writes z; a hidden layer's activation reads and writes it once more (an output
//             layer's is fused with its loss)
//   loss      reads the output layer's z and its targets, writes its delta
//   backward  a hidden layer's activation derivative (reads a and delta, writes delta); per
//             source the weight gradient (FLOPs as forward; reads the source and the delta,
//             writes G: for a sparse source only the touched rows) and, where the source takes a
//             delta, dX = delta·Wᵀ (FLOPs as forward; reads W and delta, writes dX); the bias
//             gradient reads the delta
//   update    the optimizer's update of every parameter: reads w and g, reads and writes each
//             state array, writes w (SGD 3, Momentum/AdaGrad/RMSProp 5, Adam and AdaDelta 7
//             floats per parameter); for a matrix fed by a sparse input updated row-sparse, the
//             touched rows only
// Dense products run at the tensor peak of the precision (FP32, TF32 or BF16); products over a
// sparse source at the FP32 peak (gathers do not use tensor cores). Layers other than fully
// connected ones (convolutions, pooling) are counted by their activations' traffic only and
// named in StepCost::unmodelled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/enums.h"

namespace nn {

class Backend;
class Network;
struct ExampleSet;

// One layer as the cost model sees it.
struct LayerShape {
  std::string name;
  LayerKind kind = LayerKind::Hidden;
  LayerType type = LayerType::FullyConnected;
  uint32_t units = 0;
  bool sparse_input = false;  // an input layer fed sparse rows
  double nnz_per_row = 0.0;   // non-zeros per row of a sparse input (or sparse targets)
  // Sparse inputs: the distinct rows of the matrices it feeds that one minibatch touches (0: not
  // known, taken as min(B·k, units)), and whether the optimizer updates only those rows
  // (train/row_sparse.h) instead of every row.
  double touched_rows = 0.0;
  bool row_sparse_update = false;
  bool identity = false;  // Linear activation: no activation pass
  bool has_bias = true;
  std::vector<std::string> sources;
};

struct PhaseCost {
  std::string layer;  // "" for the whole network (the update of all parameters is per layer)
  std::string phase;  // forward, loss, backward, update
  double flops = 0, bytes = 0;
  bool tensor = false;  // FLOPs at the tensor peak (dense products in TF32/BF16)
};

struct MachinePeaks {
  double fp32_flops = 0;    // FLOP/s of an FP32 product (CUDA cores, or the CPU's)
  double tensor_flops = 0;  // FLOP/s of a dense product in the run's precision (= fp32 in FP32)
  double bytes_per_s = 0;   // memory bandwidth
};

struct StepCost {
  std::vector<PhaseCost> phases;
  std::vector<std::string> unmodelled;  // layers whose arithmetic is not counted
  double flops() const;
  double bytes() const;
  // Least time of one phase, and of the step (the phases' sum), on `peaks`.
  static double floor_seconds(const PhaseCost& p, const MachinePeaks& peaks);
  double floor_seconds(const MachinePeaks& peaks) const;
  // The step's floor split by phase name (forward, loss, backward, update).
  std::map<std::string, double> floor_by_phase(const MachinePeaks& peaks) const;
};

// The peaks of `backend` as measured here: a square gemm of `n` in its current precision and math
// mode (tensor_flops; also fp32_flops, which a TF32 or BF16 run cannot measure apart), and
// y += a·x over two arrays of `bytes` (three arrays' traffic). A few tenths of a second on a CPU.
MachinePeaks measure_peaks(Backend& backend, int n = 2048, size_t bytes = size_t(256) << 20);

// `tensor`: dense products run at the tensor peak (TF32 or BF16); `target_nnz`: non-zeros per row
// of the targets of each sparse output layer (by layer name; absent: dense targets).
StepCost step_cost(const std::vector<LayerShape>& layers, uint32_t batch, OptimizerKind optimizer,
                   bool tensor, const std::map<std::string, double>& target_nnz = {});

// The mean number of distinct columns that a minibatch of `rows` examples of the sparse dataset
// `d` touches: counted over up to `batches` consecutive minibatches from the start (an estimate
// for shuffled ones). 0 for a dense or empty dataset.
double mean_distinct_rows(const ExampleSet& d, uint32_t rows, uint32_t batches = 16);

// The shapes of `net`'s layers; `input_nnz` gives the mean non-zeros per row of each sparse
// input layer (by name).
std::vector<LayerShape> layer_shapes(const Network& net,
                                     const std::map<std::string, double>& input_nnz);

}  // namespace nn
