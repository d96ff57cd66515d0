// Public API: an Evaluator runs forward passes of a Model over batches held in the caller's
// memory (dense row-major floats or CSR) and returns a layer's full outputs or its top K per row.
// Each Evaluator owns its activation buffers and reads the Model's weights in place (no copy), so
// several threads may each hold an Evaluator over one Model and predict at the same time with no
// lock; on a GPU each Evaluator also has its own CUDA stream and scratch memory (a backend of its
// own on the Model's device). One Evaluator must not be used by two threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/model.h"

namespace nn::api {

// Rows x cols floats, row-major, owned by the caller.
struct DenseInput {
  const float* values = nullptr;
  uint64_t rows = 0, cols = 0;
};

// CSR rows owned by the caller: row r's entries are index/value[row_ptr[r] .. row_ptr[r+1]).
// `values` may be null (every entry is 1). Column indices must be < cols; row_ptr must start at
// 0 and never decrease. Checked, with the offending row named.
struct CsrInput {
  const uint64_t* row_ptr = nullptr;  // rows + 1 offsets
  const uint32_t* index = nullptr;
  const float* values = nullptr;
  uint64_t rows = 0, cols = 0;
};

// One batch for an input layer, dense or CSR. It may have fewer columns than the layer has units
// (a layer's width is its dataset's, rounded up by nn-generate): the missing columns are zeros.
// More columns than units is an error. Either kind feeds either kind of
// input layer: the Evaluator converts on the host (a dense batch's non-zeros become CSR entries,
// a CSR batch is scattered into zeros), so both give the same outputs.
struct Input {
  Input(const DenseInput& d) : dense(d), is_csr(false) {}  // NOLINT: implicit by design
  Input(const CsrInput& c) : csr(c), is_csr(true) {}       // NOLINT: implicit by design
  DenseInput dense;
  CsrInput csr;
  bool is_csr;
  uint64_t rows() const { return is_csr ? csr.rows : dense.rows; }
  uint64_t cols() const { return is_csr ? csr.cols : dense.cols; }
};

// One batch per input layer, by layer name, for networks with several input layers (two towers
// and the like); every batch has the same rows. Each input layer is given exactly once.
using NamedInputs = std::vector<std::pair<std::string, Input>>;

// Columns to leave out of each row's top K, as CSR over the same rows (values unused).
struct Exclusion {
  const uint64_t* row_ptr = nullptr;
  const uint32_t* index = nullptr;
  uint64_t rows = 0;
};

class Evaluator {
 public:
  // `max_batch` rows are run per forward pass (larger inputs are processed in chunks of it).
  explicit Evaluator(std::shared_ptr<const Model> model, uint32_t max_batch = 1024);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  const Model& model() const { return *model_; }
  // Units of `layer` ("" = the model's first output layer).
  uint64_t units(const std::string& layer = "") const;
  // The names of the network's input layers, in the network's order.
  std::vector<std::string> input_layers() const;

  // out[rows][units(layer)] = the layer's activations for every row of `input`.
  // A single Input feeds a network's only input layer.
  void outputs(const Input& input, const std::string& layer, float* out);
  void outputs(const NamedInputs& inputs, const std::string& layer, float* out);
  // Per row, the k highest-scoring units of `layer` in descending order (ties: lower index
  // first), skipping NaN scores and the columns `exclude` lists for that row. Rows with fewer
  // than k candidates get index UINT32_MAX and score -inf in the remaining places.
  // index/score are [rows][k]. k must be in [1, units(layer)].
  void top_k(const Input& input, uint32_t k, const std::string& layer, const Exclusion* exclude,
             uint32_t* index, float* score);
  void top_k(const NamedInputs& inputs, uint32_t k, const std::string& layer,
             const Exclusion* exclude, uint32_t* index, float* score);

  struct Impl;

 private:
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nn::api
