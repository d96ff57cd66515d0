// ExampleSet helpers: type names, density, and the consistency check every loader and producer
// runs before a dataset reaches training, so that later code can index the arrays unchecked.
#include "data/dataset.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "core/error.h"

namespace nn {

const char* to_string(DataType t) {
  switch (t) {
    case DataType::UInt:
      return "UInt";
    case DataType::Int:
      return "Int";
    case DataType::LLInt:
      return "LLInt";
    case DataType::ULLInt:
      return "ULLInt";
    case DataType::Float:
      return "Float";
    case DataType::Double:
      return "Double";
    case DataType::RGB8:
      return "RGB8";
    case DataType::RGB16:
      return "RGB16";
    case DataType::UChar:
      return "UChar";
    case DataType::Char:
      return "Char";
  }
  return "Unknown";
}

double ExampleSet::density() const {
  if (!is_sparse()) return 1.0;
  const double positions = double(unique_examples) * double(features());
  return positions > 0 ? double(nnz()) / positions : 0.0;
}

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Builds "<where>: <variable><suffix>: <problem>" errors.
class Checker {
 public:
  Checker(const std::string& where, const std::string& suffix) : where_(where), suffix_(suffix) {}
  [[noreturn]] void fail(const char* var, const std::string& problem) const {
    throw DataError(where_ + ": " + var + suffix_ + ": " + problem);
  }
  void size(const char* var, uint64_t actual, uint64_t expected, const std::string& why) const {
    if (actual != expected)
      fail(var, "has " + std::to_string(actual) + " entries; expected " + std::to_string(expected) +
                    " (" + why + ")");
  }
  void empty(const char* var, uint64_t actual, const std::string& why) const {
    if (actual != 0)
      fail(var, "has " + std::to_string(actual) + " entries; expected none (" + why + ")");
  }
  template <typename T>
  void finite(const char* var, const std::vector<T>& v) const {
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i]))
        fail(var, "entry " + std::to_string(i) + " is " + num(v[i]) + "; expected a finite value");
  }

 private:
  const std::string& where_;
  const std::string& suffix_;
};

void check_shape(const ExampleSet& ds, const Checker& c) {
  if (ds.dimensions < 1 || ds.dimensions > 3)
    c.fail("dimensions", "is " + std::to_string(ds.dimensions) + "; expected 1, 2 or 3");
  if (ds.width < 1) c.fail("width", "is 0; expected at least 1");
  if (ds.height < 1) c.fail("height", "is 0; expected at least 1");
  if (ds.length < 1) c.fail("length", "is 0; expected at least 1");
  if (ds.dimensions < 2 && ds.height != 1)
    c.fail("height", "is " + std::to_string(ds.height) + " but dimensions is " +
                         std::to_string(ds.dimensions) + "; expected 1");
  if (ds.dimensions < 3 && ds.length != 1)
    c.fail("length", "is " + std::to_string(ds.length) + " but dimensions is " +
                         std::to_string(ds.dimensions) + "; expected 1");
  if (uint32_t(ds.type) > uint32_t(DataType::Char))
    c.fail("dataType", "is " + std::to_string(uint32_t(ds.type)) + "; expected a code 0..9");
}

void check_examples(const ExampleSet& ds, const Checker& c) {
  const uint64_t e = ds.examples, u = ds.unique_examples;
  if (ds.is_indexed()) {
    c.size("index", ds.index.size(), e, "one per example");
    for (size_t i = 0; i < ds.index.size(); ++i)
      if (ds.index[i] >= u)
        c.fail("index", "entry " + std::to_string(i) + " is " + std::to_string(ds.index[i]) +
                            "; expected < " + std::to_string(u) + " (unique examples)");
  } else {
    if (u != e)
      c.fail("uniqueExamplesDim", "is " + std::to_string(u) + " but the dataset is not Indexed; " +
                                      "expected the example count " + std::to_string(e));
    c.empty("index", ds.index.size(), "the dataset is not Indexed");
  }
  if (ds.is_weighted()) {
    c.size("dataWeight", ds.example_weight.size(), e, "one per example");
    c.finite("dataWeight", ds.example_weight);
  } else {
    c.empty("dataWeight", ds.example_weight.size(), "the dataset is not Weighted");
  }
}

void check_sparse(const ExampleSet& ds, const Checker& c) {
  const uint64_t u = ds.unique_examples, nnz = ds.nnz(), features = ds.features();
  c.empty("data", ds.dense.size(), "the dataset is Sparse");
  c.size("sparseStart", ds.sparse_start.size(), u, "one per unique example");
  c.size("sparseEnd", ds.sparse_end.size(), u, "one per unique example");
  for (uint64_t i = 0; i < u; ++i) {
    const uint64_t s = ds.sparse_start[i], t = ds.sparse_end[i];
    if (s > t)
      c.fail("sparseEnd", "example " + std::to_string(i) + " ends at " + std::to_string(t) +
                              " before its start " + std::to_string(s));
    if (t > nnz)
      c.fail("sparseEnd", "example " + std::to_string(i) + " ends at " + std::to_string(t) +
                              "; expected <= " + std::to_string(nnz) + " (stored entries)");
  }
  const uint32_t* idx = ds.sparse_index.data();
  for (uint64_t k = 0; k < nnz; ++k)
    if (idx[k] >= features)
      c.fail("sparseIndex", "entry " + std::to_string(k) + " is " + std::to_string(idx[k]) +
                                "; expected < " + std::to_string(features) +
                                " (width x height x length)");
  if (ds.is_boolean()) {
    c.empty("sparseData", ds.sparse_value.size(), "the dataset is Boolean");
  } else {
    c.size("sparseData", ds.sparse_value.size(), nnz, "one value per sparseIndex entry");
    c.finite("sparseData", ds.sparse_value);
  }
}

void check_dense(const ExampleSet& ds, const Checker& c) {
  const uint64_t u = ds.unique_examples, features = ds.features();
  c.empty("sparseStart", ds.sparse_start.size(), "the dataset is dense");
  c.empty("sparseEnd", ds.sparse_end.size(), "the dataset is dense");
  c.empty("sparseIndex", ds.sparse_index.size(), "the dataset is dense");
  c.empty("sparseData", ds.sparse_value.size(), "the dataset is dense");
  if (ds.is_boolean()) {
    c.size("data", ds.dense.size(), u, "one class id per unique example (dense Boolean)");
    for (size_t i = 0; i < ds.dense.size(); ++i) {
      const float v = ds.dense[i];
      if (!(v >= 0 && double(v) < double(features) && v == std::floor(v)))
        c.fail("data", "example " + std::to_string(i) + " has class id " + num(v) +
                           "; expected an integer in [0, " + std::to_string(features) + ")");
    }
  } else {
    c.size("data", ds.dense.size(), u * features,
           std::to_string(u) + " unique examples x " + std::to_string(features) + " features");
    c.finite("data", ds.dense);
  }
}

}  // namespace

void ExampleSet::validate(const std::string& where) const {
  validate(where, "");
}

void ExampleSet::validate(const std::string& where, const std::string& var_suffix) const {
  const Checker c(where, var_suffix);
  check_shape(*this, c);
  check_examples(*this, c);
  if (is_sparse())
    check_sparse(*this, c);
  else
    check_dense(*this, c);
  if (feature_names) {
    const std::string problem = feature_names_problem(*feature_names, features());
    if (!problem.empty()) c.fail("indToFeature", problem);
  }
}

}  // namespace nn
