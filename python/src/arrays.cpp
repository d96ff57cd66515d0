// Checking and converting NumPy/SciPy arguments (see arrays.h).
#include "arrays.h"

#include <pybind11/stl.h>

// Hidden visibility: the module exports only its init function (pybind11 recommends it).
#pragma GCC visibility push(hidden)
namespace nnpy {
namespace {

std::string dtype_name(const py::handle& arr) {
  return py::str(arr.attr("dtype")).cast<std::string>();
}

bool is_integer_array(const py::array& a) {
  const char k = a.dtype().kind();
  return k == 'i' || k == 'u';
}

// `obj` as a C-contiguous float32 array; anything else (float64 included) is refused, so a
// silent copy never hides in a hot loop.
py::array_t<float> float32_array(const py::handle& obj, const std::string& arg) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(arg + ": expected a numpy.ndarray or scipy.sparse.csr_matrix; got " +
                         py::str(py::type::of(obj)).cast<std::string>());
  py::array a = py::reinterpret_borrow<py::array>(obj);
  if (!a.dtype().is(py::dtype::of<float>()))
    throw py::value_error(arg + ": expected float32 values; got " + dtype_name(a) +
                          " (convert with .astype(numpy.float32))");
  return py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
}

}  // namespace

bool is_scipy_sparse(const py::handle& obj) {
  py::module_ sys = py::module_::import("sys");
  if (!sys.attr("modules").contains("scipy.sparse")) return false;
  return py::module_::import("scipy.sparse").attr("issparse")(obj).cast<bool>();
}

std::vector<uint32_t> to_u32(const py::handle& obj, uint64_t limit, const std::string& arg) {
  py::array a = py::array::ensure(obj);
  if (a && a.size() == 0) return {};
  if (!a || !is_integer_array(a))
    throw py::value_error(arg + ": expected an integer array; got " +
                          (a ? dtype_name(a) : std::string("a non-array")));
  auto v = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  if (a.dtype().kind() == 'u' && a.itemsize() == 8) {  // uint64 beyond int64: check as unsigned
    auto u = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>::ensure(a);
    std::vector<uint32_t> out(size_t(u.size()));
    for (py::ssize_t i = 0; i < u.size(); ++i) {
      if (u.data()[i] >= limit)
        throw py::value_error(arg + ": entry " + std::to_string(i) + " is " +
                              std::to_string(u.data()[i]) + "; must be below " +
                              std::to_string(limit));
      out[size_t(i)] = uint32_t(u.data()[i]);
    }
    return out;
  }
  std::vector<uint32_t> out(size_t(v.size()));
  for (py::ssize_t i = 0; i < v.size(); ++i) {
    const int64_t x = v.data()[i];
    if (x < 0 || uint64_t(x) >= limit)
      throw py::value_error(arg + ": entry " + std::to_string(i) + " is " + std::to_string(x) +
                            "; must be in [0, " + std::to_string(limit) + ")");
    out[size_t(i)] = uint32_t(x);
  }
  return out;
}

std::vector<uint64_t> to_u64(const py::handle& obj, const std::string& arg) {
  py::array a = py::array::ensure(obj);
  if (!a || !is_integer_array(a))
    throw py::value_error(arg + ": expected an integer array; got " +
                          (a ? dtype_name(a) : std::string("a non-array")));
  auto v = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  std::vector<uint64_t> out(size_t(v.size()));
  for (py::ssize_t i = 0; i < v.size(); ++i) {
    if (v.data()[i] < 0)
      throw py::value_error(arg + ": entry " + std::to_string(i) + " is negative");
    out[size_t(i)] = uint64_t(v.data()[i]);
  }
  return out;
}

Batch to_batch(const py::handle& x, const std::string& arg) {
  Batch b;
  if (is_scipy_sparse(x)) {
    const std::string format = x.attr("format").cast<std::string>();
    if (format != "csr")
      throw py::value_error(arg + ": scipy.sparse matrices must be in CSR format; got '" + format +
                            "' (convert with .tocsr())");
    py::tuple shape = x.attr("shape");
    b.csr = true;
    b.rows = shape[0].cast<uint64_t>();
    b.cols = shape[1].cast<uint64_t>();
    py::object data = x.attr("data");
    if (!py::array::ensure(data).dtype().is(py::dtype::of<float>()))
      throw py::value_error(arg + ": expected float32 values; got " + dtype_name(data) +
                            " (convert with .astype(numpy.float32))");
    b.data = float32_array(data, arg + ".data");
    b.row_ptr = to_u64(x.attr("indptr"), arg + ".indptr");
    b.index = to_u32(x.attr("indices"), b.cols, arg + ".indices");
    if (b.row_ptr.size() != b.rows + 1)
      throw py::value_error(arg + ".indptr: has " + std::to_string(b.row_ptr.size()) +
                            " entries; expected rows + 1 = " + std::to_string(b.rows + 1));
    if (b.row_ptr.back() != b.index.size() || b.index.size() != size_t(b.data.size()))
      throw py::value_error(arg + ": indptr[-1], len(indices) and len(data) differ");
    return b;
  }
  b.dense = float32_array(x, arg);
  if (b.dense.ndim() == 1) {
    b.rows = 1;
    b.cols = uint64_t(b.dense.shape(0));
  } else if (b.dense.ndim() == 2) {
    b.rows = uint64_t(b.dense.shape(0));
    b.cols = uint64_t(b.dense.shape(1));
  } else {
    throw py::value_error(arg + ": expected a 1-D or 2-D array; got " +
                          std::to_string(b.dense.ndim()) + " dimensions");
  }
  return b;
}

nn::api::Input Batch::input() const {
  if (csr) return nn::api::CsrInput{row_ptr.data(), index.data(), data.data(), rows, cols};
  return nn::api::DenseInput{dense.data(), rows, cols};
}

ExcludeRows to_exclude(const py::handle& obj, uint64_t rows, uint64_t cols) {
  ExcludeRows ex;
  if (is_scipy_sparse(obj)) {
    if (obj.attr("format").cast<std::string>() != "csr")
      throw py::value_error("exclude: scipy.sparse matrices must be in CSR format (.tocsr())");
    py::tuple shape = obj.attr("shape");
    if (shape[0].cast<uint64_t>() != rows)
      throw py::value_error("exclude: has " + std::to_string(shape[0].cast<uint64_t>()) +
                            " rows; x has " + std::to_string(rows));
    ex.row_ptr = to_u64(obj.attr("indptr"), "exclude.indptr");
    ex.index = to_u32(obj.attr("indices"), cols, "exclude.indices");
    return ex;
  }
  if (py::isinstance<py::str>(obj) || !py::isinstance<py::sequence>(obj))
    throw py::type_error(
        "exclude: expected None, a scipy.sparse.csr_matrix or a list of column "
        "lists (one per row)");
  py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
  if (uint64_t(py::len(seq)) != rows)
    throw py::value_error("exclude: has " + std::to_string(py::len(seq)) + " rows; x has " +
                          std::to_string(rows));
  ex.row_ptr.push_back(0);
  for (uint64_t r = 0; r < rows; ++r) {
    py::object row = seq[r];
    if (!row.is_none()) {
      std::vector<uint32_t> cols_r =
          to_u32(py::array::ensure(row), cols, "exclude[" + std::to_string(r) + "]");
      ex.index.insert(ex.index.end(), cols_r.begin(), cols_r.end());
    }
    ex.row_ptr.push_back(ex.index.size());
  }
  return ex;
}

std::string path_arg(const py::object& p, const std::string& arg) {
  if (!py::isinstance<py::str>(p) && !py::hasattr(p, "__fspath__"))
    throw py::type_error(arg + ": expected a path (str or os.PathLike); got " +
                         py::str(py::type::of(p)).cast<std::string>());
  py::object s = py::module_::import("os").attr("fspath")(p);
  if (!py::isinstance<py::str>(s)) throw py::type_error(arg + ": expected a str path");
  return s.cast<std::string>();
}

// A NumPy array or scipy.sparse CSR matrix as a training Dataset (copied into the engine).
nn::api::Dataset to_dataset(const std::string& name, const py::handle& v) {
  if (is_scipy_sparse(v)) {
    Batch b = to_batch(v, "data['" + name + "']");
    // Every stored value 1: an indicator dataset, as nn-generate writes for ratings.
    const float* d = b.data.data();
    bool ones = true;
    for (py::ssize_t i = 0; i < b.data.size() && ones; ++i) ones = d[i] == 1.0f;
    return nn::api::Dataset::csr(name, b.row_ptr.data(), b.index.data(), ones ? nullptr : d, b.rows,
                                 b.cols);
  }
  Batch b = to_batch(v, "data['" + name + "']");
  if (b.dense.ndim() != 2) throw py::value_error("data['" + name + "']: expected a 2-D array");
  return nn::api::Dataset::dense(name, b.dense.data(), b.rows, b.cols);
}

}  // namespace nnpy
#pragma GCC visibility pop
