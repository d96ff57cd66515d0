// Host-side minibatch assembly.
#include "model/batch_loader.h"

#include "core/error.h"
#include "core/random.h"

namespace nn {

BatchLoader::BatchLoader(const BoundData& data, std::vector<DenoiseSetting> denoise, uint64_t seed)
    : data_(data), denoise_(std::move(denoise)), seed_(seed) {
  denoise_.resize(data_.inputs.size());
}

void BatchLoader::assemble(const uint32_t* ids, uint32_t count, uint64_t step, bool training,
                           HostBatch& out, const uint32_t* keys) const {
  const size_t slots = data_.inputs.size() + data_.outputs.size();
  out.rows = count;
  out.sparse.resize(slots);
  out.dense.resize(slots);
  out.weights.resize(slots);
  for (size_t i = 0; i < slots; ++i) {
    const bool is_input = i < data_.inputs.size();
    const ExampleSet& ds =
        *(is_input ? data_.inputs[i] : data_.outputs[i - data_.inputs.size()]).dataset;
    // Row normalisation first: denoising then drops entries of the normalised row.
    const bool l2 = is_input && data_.inputs[i].normalize == RowNormalization::L2;
    if (ds.is_sparse()) {
      gather_sparse(ds, ids, count, out.sparse[i]);
      if (l2) normalize_rows_l2(out.sparse[i]);
      if (is_input && training && denoise_[i].p > 0.0f)
        denoise(out.sparse[i], keys ? keys : ids, denoise_[i], step);
    } else {
      out.dense[i].resize(size_t(count) * ds.features());
      gather_dense(ds, ids, count, is_input, out.dense[i].data());
      if (l2) normalize_rows_l2(out.dense[i].data(), count, ds.features());
      gather_weights(ds, ids, count, out.weights[i]);
    }
  }
}

// Drops each stored entry with probability p and scales survivors by 1/(1-p), so the expected
// input is unchanged (DSSTNE's denoising, its kLoadSparseDenoisedInputUnit kernel; how our masks
// differ: docs/dsstne-compatibility.md, "Denoising masks"). The draw for an entry is
// keyed by (step, layer, example id, entry within the example), never by the entry's position
// in this batch, so a process holding part of a minibatch (data parallelism) drops exactly what
// one process holding all of it would.
void BatchLoader::denoise(SparseBatch& b, const uint32_t* ids, const DenoiseSetting& d,
                          uint64_t step) const {
  const float keep_scale = 1.0f / (1.0f - d.p);
  const uint64_t step_seed = seed_ ^ mix64(step * 4096 + d.layer_index);
  std::vector<uint32_t> row_ptr(b.rows + 1, 0);
  std::vector<uint32_t> index;
  std::vector<float> value;
  index.reserve(b.index.size());
  value.reserve(b.index.size());
  for (uint32_t r = 0; r < b.rows; ++r) {
    for (uint32_t e = b.row_ptr[r]; e < b.row_ptr[r + 1]; ++e) {
      if (uniform_at(step_seed, ids[r], e - b.row_ptr[r]) < d.p) continue;
      index.push_back(b.index[e]);
      value.push_back((b.value.empty() ? 1.0f : b.value[e]) * keep_scale);
    }
    row_ptr[r + 1] = static_cast<uint32_t>(index.size());
  }
  b.row_ptr.swap(row_ptr);
  b.index.swap(index);
  b.value.swap(value);
}

void append_rows(HostBatch& into, const HostBatch& more) {
  if (more.rows == 0) return;
  if (into.rows == 0) {
    into = more;
    return;
  }
  NN_CHECK(into.sparse.size() == more.sparse.size(), "append_rows: different bindings");
  for (size_t i = 0; i < more.sparse.size(); ++i) {
    const SparseBatch& m = more.sparse[i];
    if (m.row_ptr.empty()) continue;  // a dense slot
    SparseBatch& s = into.sparse[i];
    const uint32_t base = static_cast<uint32_t>(s.index.size());
    for (uint32_t r = 1; r <= m.rows; ++r) s.row_ptr.push_back(base + m.row_ptr[r]);
    s.rows += m.rows;
    s.index.insert(s.index.end(), m.index.begin(), m.index.end());
    s.value.insert(s.value.end(), m.value.begin(), m.value.end());
    s.row_weight.insert(s.row_weight.end(), m.row_weight.begin(), m.row_weight.end());
  }
  for (size_t i = 0; i < more.dense.size(); ++i)
    into.dense[i].insert(into.dense[i].end(), more.dense[i].begin(), more.dense[i].end());
  for (size_t i = 0; i < more.weights.size(); ++i)
    into.weights[i].insert(into.weights[i].end(), more.weights[i].begin(), more.weights[i].end());
  into.rows += more.rows;
}

HostBatch slice_rows(const HostBatch& whole, uint32_t first, uint32_t count) {
  NN_CHECK(uint64_t(first) + count <= whole.rows, "slice_rows: rows out of range");
  HostBatch out;
  out.rows = count;
  out.sparse.resize(whole.sparse.size());
  out.dense.resize(whole.dense.size());
  out.weights.resize(whole.weights.size());
  for (size_t i = 0; i < whole.sparse.size(); ++i) {
    const SparseBatch& w = whole.sparse[i];
    if (w.row_ptr.empty()) continue;  // a dense slot
    SparseBatch& s = out.sparse[i];
    s.rows = count;
    s.cols = w.cols;
    s.ignore_zero = w.ignore_zero;
    const uint32_t lo = w.row_ptr[first], hi = w.row_ptr[first + count];
    s.row_ptr.resize(size_t(count) + 1);
    for (uint32_t r = 0; r <= count; ++r) s.row_ptr[r] = w.row_ptr[first + r] - lo;
    s.index.assign(w.index.begin() + lo, w.index.begin() + hi);
    if (!w.value.empty()) s.value.assign(w.value.begin() + lo, w.value.begin() + hi);
    if (!w.row_weight.empty())
      s.row_weight.assign(w.row_weight.begin() + first, w.row_weight.begin() + first + count);
  }
  for (size_t i = 0; i < whole.dense.size(); ++i) {
    const std::vector<float>& d = whole.dense[i];
    if (!d.empty() && whole.rows > 0) {
      const size_t width = d.size() / whole.rows;
      out.dense[i].assign(d.begin() + size_t(first) * width,
                          d.begin() + size_t(first + count) * width);
    }
  }
  for (size_t i = 0; i < whole.weights.size(); ++i) {
    const std::vector<float>& w = whole.weights[i];
    if (!w.empty()) out.weights[i].assign(w.begin() + first, w.begin() + first + count);
  }
  return out;
}

}  // namespace nn
