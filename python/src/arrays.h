// NumPy / SciPy arguments of the Python module, checked and viewed as the library's inputs:
// dense float32 arrays, scipy.sparse CSR matrices (float32 values, any integer index dtype),
// exclusion lists. Every error names the argument ("x: ...", "exclude: ...") and is raised as
// TypeError (wrong kind of object) or ValueError (wrong shape, dtype or content).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nn/dataset.h"
#include "nn/evaluator.h"

// Hidden visibility: the module exports only its init function (pybind11 recommends it).
#pragma GCC visibility push(hidden)
namespace nnpy {

namespace py = pybind11;

// A 2-D input batch (NumPy array or scipy.sparse CSR matrix), owning whatever had to be
// converted (index dtypes other than uint32/uint64); otherwise it views the caller's arrays.
struct Batch {
  bool csr = false;
  py::array_t<float> dense;  // csr == false: C-contiguous float32 [rows][cols]
  py::array_t<float> data;   // csr: values
  std::vector<uint64_t> row_ptr;
  std::vector<uint32_t> index;
  uint64_t rows = 0, cols = 0;
  nn::api::Input input() const;
};

// True when `obj` is a scipy.sparse matrix or array (any format).
bool is_scipy_sparse(const py::handle& obj);

// `x` as a batch: a 2-D float32 NumPy array, or a scipy.sparse CSR matrix with float32 data.
// A 1-D array is one row. Other formats/dtypes/shapes raise with `arg` named.
Batch to_batch(const py::handle& x, const std::string& arg);

// Per-row columns to leave out: None, a CSR matrix of `rows` rows, or a sequence of `rows`
// sequences of column numbers.
struct ExcludeRows {
  std::vector<uint64_t> row_ptr;
  std::vector<uint32_t> index;
  nn::api::Exclusion view(uint64_t rows) const { return {row_ptr.data(), index.data(), rows}; }
};
ExcludeRows to_exclude(const py::handle& obj, uint64_t rows, uint64_t cols);

// Integer index array (any integer dtype) to uint32 / uint64, rejecting negative or too large
// values with `arg` named.
std::vector<uint32_t> to_u32(const py::handle& arr, uint64_t limit, const std::string& arg);
std::vector<uint64_t> to_u64(const py::handle& arr, const std::string& arg);

// A NumPy array or scipy.sparse CSR matrix as a Dataset named `name` (copied into the engine);
// a CSR matrix whose stored values are all 1 becomes an indicator dataset.
nn::api::Dataset to_dataset(const std::string& name, const py::handle& v);

// A file name given as str or os.PathLike; TypeError naming `arg` otherwise.
std::string path_arg(const py::object& p, const std::string& arg);

}  // namespace nnpy
#pragma GCC visibility pop
