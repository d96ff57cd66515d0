// In-memory dataset in DSSTNE's model (docs/file-formats.md, "Dataset files"): dense or sparse
// (CSR start/end/index arrays), indicator (Boolean) or analog values, optional per-example
// weights and index indirection. Datasets hold data only; no loss maths here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/feature_names.h"

namespace nn {

// DSSTNE dataType codes.
enum class DataType : uint32_t {
  UInt = 0,
  Int = 1,
  LLInt = 2,
  ULLInt = 3,
  Float = 4,
  Double = 5,
  RGB8 = 6,
  RGB16 = 7,
  UChar = 8,
  Char = 9,
};
const char* to_string(DataType t);

// DSSTNE attribute bits.
namespace attr {
constexpr uint32_t Sparse = 1;
constexpr uint32_t Boolean = 2;
constexpr uint32_t Compressed = 4;
constexpr uint32_t Recurrent = 8;
constexpr uint32_t Mutable = 16;
constexpr uint32_t SparseIgnoreZero = 32;
constexpr uint32_t Indexed = 64;
constexpr uint32_t Weighted = 128;
}  // namespace attr

enum class DataKind : uint32_t { Numeric = 0, Image = 1, Audio = 2 };

// One named dataset (DSSTNE's NNDataSet): the examples a layer's "DataSet" key binds to. The
// public API wraps it as nn::api::Dataset (include/nn/dataset.h).
struct ExampleSet {
  std::string name;
  DataType type = DataType::Float;
  uint32_t attributes = 0;
  DataKind kind = DataKind::Numeric;
  int dimensions = 1;
  uint32_t width = 1, height = 1, length = 1;
  uint64_t examples = 0;         // E
  uint64_t unique_examples = 0;  // U (== E unless Indexed)

  // Sparse: example u's entries are sparse_index[sparse_start[u] .. sparse_end[u]).
  std::vector<uint64_t> sparse_start, sparse_end;
  std::vector<uint32_t> sparse_index;
  std::vector<float> sparse_value;  // empty when Boolean (all ones)

  // Dense: U * features() values, example-major (x fastest, then y, then z). Raw values as stored
  // (e.g. 0..255 for UChar); input normalisation is applied when a batch is gathered.
  // Dense + Boolean: one class id per unique example (compressed one-hot).
  std::vector<float> dense;

  std::vector<float> example_weight;  // Weighted: one per example (E)
  std::vector<uint32_t> index;        // Indexed: example -> unique row (E)

  // The features' names in index order (indToFeatureN in the file), when the file has them:
  // nn-generate writes them, so that a network trained on the dataset knows its items.
  FeatureNames feature_names;

  bool is_sparse() const { return attributes & attr::Sparse; }
  bool is_boolean() const { return attributes & attr::Boolean; }
  bool is_indexed() const { return attributes & attr::Indexed; }
  bool is_weighted() const { return attributes & attr::Weighted; }
  bool sparse_ignore_zero() const { return attributes & attr::SparseIgnoreZero; }
  uint64_t features() const { return uint64_t(width) * height * length; }
  // Row of unique data used by example e.
  uint64_t row(uint64_t e) const { return is_indexed() ? index[e] : e; }
  uint64_t nnz() const { return sparse_index.size(); }
  // Fraction of stored entries over all positions (sparse only).
  double density() const;

  // Throws DataError("<where>: ...") if the arrays are inconsistent: sizes, start <= end,
  // indices < features(), finite values, weights/index sizes. `where` names the source file.
  void validate(const std::string& where) const;
  // Same checks, naming arrays by their file variables with this suffix (e.g. "sparseIndex0"),
  // so that problems found after reading a file point at the offending NetCDF variable.
  void validate(const std::string& where, const std::string& var_suffix) const;
};

}  // namespace nn
