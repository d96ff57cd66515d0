// Helpers for model tests: small in-memory datasets and networks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/parse.h"
#include "core/random.h"
#include "data/dataset.h"
#include "model/binding.h"
#include "model/network.h"

namespace nn::test {

// Examples drawn from 4 "tastes": items of one taste (8 of the 32 items) co-occur, so an
// autoencoder can learn them; each example has at least one item.
inline std::vector<std::vector<uint32_t>> taste_rows(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<std::vector<uint32_t>> rows(n);
  for (auto& r : rows) {
    const uint32_t taste = uint32_t(rng.below(4));
    for (uint32_t j = 0; j < 8; ++j)
      if (rng.uniform() < 0.6) r.push_back(taste * 8 + j);
    if (r.empty()) r.push_back(taste * 8);
  }
  return rows;
}

// Sparse indicator (values empty) or analog dataset from per-example index/value lists.
inline ExampleSet sparse_set(const std::string& name, uint32_t width,
                             const std::vector<std::vector<uint32_t>>& rows,
                             const std::vector<std::vector<float>>& values = {}) {
  ExampleSet ds;
  ds.name = name;
  ds.attributes = attr::Sparse | (values.empty() ? attr::Boolean : 0u);
  ds.type = values.empty() ? DataType::UInt : DataType::Float;
  ds.width = width;
  ds.examples = ds.unique_examples = rows.size();
  for (size_t r = 0; r < rows.size(); ++r) {
    ds.sparse_start.push_back(ds.sparse_index.size());
    for (size_t j = 0; j < rows[r].size(); ++j) {
      ds.sparse_index.push_back(rows[r][j]);
      if (!values.empty()) ds.sparse_value.push_back(values[r][j]);
    }
    ds.sparse_end.push_back(ds.sparse_index.size());
  }
  return ds;
}

inline ExampleSet dense_set(const std::string& name, uint32_t width, const std::vector<float>& v) {
  ExampleSet ds;
  ds.name = name;
  ds.type = DataType::Float;
  ds.width = width;
  ds.examples = ds.unique_examples = v.size() / width;
  ds.dense = v;
  return ds;
}

// Densified copy of a sparse dataset (same name unless renamed).
inline ExampleSet densify(const ExampleSet& s) {
  std::vector<float> v(s.examples * s.width, 0.0f);
  for (uint64_t e = 0; e < s.examples; ++e)
    for (uint64_t k = s.sparse_start[e]; k < s.sparse_end[e]; ++k)
      v[e * s.width + s.sparse_index[k]] += s.sparse_value.empty() ? 1.0f : s.sparse_value[k];
  return dense_set(s.name, s.width, v);
}

// Random sparse rows: each example gets `per_row` distinct indices below width.
inline std::vector<std::vector<uint32_t>> random_rows(uint64_t seed, size_t examples,
                                                      uint32_t width, uint32_t per_row) {
  Rng rng(seed);
  std::vector<std::vector<uint32_t>> rows(examples);
  for (auto& r : rows) {
    while (r.size() < per_row) {
      uint32_t c = uint32_t(rng.below(width));
      bool dup = false;
      for (uint32_t x : r) dup = dup || x == c;
      if (!dup) r.push_back(c);
    }
  }
  return rows;
}

// The recommender autoencoder of the training tests: a sparse input "input", hidden layers of 16
// Sigmoid and 12 Tanh units, a Sigmoid output "output" with CrossEntropy.
inline constexpr const char* kTwoHiddenAutoencoder = R"({"Name": "ae", "ErrorFunction":
  "CrossEntropy", "Layers": [
    {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
    {"Name": "H1", "Kind": "Hidden", "N": 16, "Activation": "Sigmoid"},
    {"Name": "H2", "Kind": "Hidden", "N": 12, "Activation": "Tanh"},
    {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
     "Activation": "Sigmoid"}]})";

struct Fixture {
  std::unique_ptr<Backend> backend;
  std::vector<ExampleSet> sets;
  NetworkSpec spec;
  BoundData bound;
  std::unique_ptr<Network> net;

  // `with`: the backend to use (the CPU backend with 2 threads when null).
  Fixture(const std::string& json, std::vector<ExampleSet> data, uint64_t seed = 7,
          std::unique_ptr<Backend> with = nullptr) {
    backend = with ? std::move(with) : make_backend("cpu", 2);
    sets = std::move(data);
    spec = parse_network_json(json, "test.json");
    resolve_auto_sizes(spec, sets);
    bound = bind_datasets(spec, sets, true, "test data");
    net = std::make_unique<Network>(*backend, spec, bound.sparse_inputs());
    net->initialize(seed);
  }
};

}  // namespace nn::test
