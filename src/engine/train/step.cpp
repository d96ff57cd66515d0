// Input loading and output loss evaluation for one minibatch.
#include "train/step.h"

#include <algorithm>

#include "core/error.h"
#include "train/loss_setup.h"

namespace nn {

void slice_sparse_columns(const SparseBatch& in, uint32_t first, uint32_t count, SparseBatch& out,
                          std::vector<float>& row_sum) {
  out.rows = in.rows;
  out.cols = count;
  out.ignore_zero = in.ignore_zero;
  out.row_weight = in.row_weight;
  out.row_ptr.assign(size_t(in.rows) + 1, 0);
  out.index.clear();
  out.value.clear();
  row_sum.assign(in.rows, 0.0f);
  std::vector<uint32_t> seen;
  for (uint32_t r = 0; r < in.rows; ++r) {
    double sum = 0.0;
    seen.clear();
    for (uint32_t e = in.row_ptr[r]; e < in.row_ptr[r + 1]; ++e) {
      const uint32_t j = in.index[e];
      if (in.value.empty())
        seen.push_back(j);
      else
        sum += in.value[e];
      if (j < first || j - first >= count) continue;
      out.index.push_back(j - first);
      if (!in.value.empty()) out.value.push_back(in.value[e]);
    }
    if (in.value.empty()) {
      std::sort(seen.begin(), seen.end());
      sum = double(std::unique(seen.begin(), seen.end()) - seen.begin());
    }
    row_sum[r] = static_cast<float>(sum);
    out.row_ptr[r + 1] = static_cast<uint32_t>(out.index.size());
  }
}

OutputLosses::OutputLosses(Network& net, const BoundData& data) : net_(net), data_(data) {
  for (const auto& out : data_.outputs) {
    const Layer& layer = net_.layer(out.layer);
    params_.push_back(loss_params(net_.spec(), layer.spec(), out.dataset));
    params_.back().row_stride = layer.kernel_row_stride();  // padded rows
    targets_.push_back(std::make_unique<TargetBuffer>());
  }
  skipped_.assign(data_.outputs.size(), false);
  loaded_.assign(data_.outputs.size(), Loaded{});
}

TargetView OutputLosses::load_own(size_t o, const HostBatch& batch, unsigned set) {
  Backend& be = net_.backend();
  const size_t slot = data_.inputs.size() + o;
  const uint32_t units = net_.layer(data_.outputs[o].layer).units();
  return data_.outputs[o].dataset->is_sparse()
             ? targets_[o]->load_sparse(be, batch.sparse[slot], units, set)
             : targets_[o]->load_dense(be, batch.dense[slot], units, batch.weights[slot], set);
}

void OutputLosses::load_targets(const HostBatch& batch, unsigned set) {
  for (size_t o = 0; o < data_.outputs.size(); ++o) {
    if (skipped_[o] || net_.layer(data_.outputs[o].layer).sharded()) continue;
    loaded_[o] = Loaded{&batch, load_own(o, batch, set)};
  }
}

TargetView OutputLosses::targets(size_t o, const HostBatch& batch, const HostBatch* whole,
                                 uint32_t& rows, uint32_t& cols) {
  Backend& be = net_.backend();
  const bool preloaded = loaded_[o].batch == &batch;
  loaded_[o].batch = nullptr;
  const size_t slot = data_.inputs.size() + o;
  Layer& out = net_.layer(data_.outputs[o].layer);
  if (!out.sharded()) {
    rows = batch.rows;
    cols = out.units();
    return preloaded ? loaded_[o].view : load_own(o, batch, 0);
  }
  NN_CHECK(whole != nullptr, "model-parallel output without the whole minibatch");
  const ShardInfo& sh = out.shard();
  rows = whole->rows;
  cols = sh.count;
  TargetView tv;
  if (data_.outputs[o].dataset->is_sparse()) {
    slice_sparse_columns(whole->sparse[slot], sh.first, sh.count, slice_, row_sum_);
    tv = targets_[o]->load_sparse(be, slice_, sh.count);
  } else {
    const std::vector<float>& d = whole->dense[slot];
    const size_t u = out.units();
    dense_slice_.resize(size_t(rows) * sh.count);
    row_sum_.assign(rows, 0.0f);
    for (uint32_t r = 0; r < rows; ++r) {
      double sum = 0.0;
      for (size_t j = 0; j < u; ++j) sum += d[r * u + j];
      row_sum_[r] = static_cast<float>(sum);
      std::copy_n(d.data() + r * u + sh.first, sh.count,
                  dense_slice_.data() + size_t(r) * sh.count);
    }
    tv = targets_[o]->load_dense(be, dense_slice_, sh.count, whole->weights[slot]);
  }
  tv.row_sum = targets_[o]->load_row_sum(be, row_sum_);
  return tv;
}

double OutputLosses::evaluate(const HostBatch& batch, bool write_deltas, const HostBatch* whole) {
  Backend& be = net_.backend();
  double err = 0.0;
  for (size_t o = 0; o < data_.outputs.size(); ++o) {
    if (skipped_[o]) continue;
    uint32_t rows = 0, cols = 0;
    const TargetView tv = targets(o, batch, whole, rows, cols);
    Layer& out = net_.layer(data_.outputs[o].layer);
    if (write_deltas)
      err += be.loss_and_delta(params_[o], out.activations(), tv, rows, cols, out.delta());
    else
      err += be.loss(params_[o], out.activations(), tv, rows, cols);
  }
  return err;
}

void OutputLosses::accumulate(const HostBatch& batch, bool write_deltas, const HostBatch* whole,
                              double* sum, bool activations_deferred, Profiler* profiler) {
  Backend& be = net_.backend();
  for (size_t o = 0; o < data_.outputs.size(); ++o) {
    if (skipped_[o]) continue;
    uint32_t rows = 0, cols = 0;
    TargetView tv;
    {
      ProfileRange range(profiler, ProfilePhase::Data, "upload targets");
      tv = targets(o, batch, whole, rows, cols);
    }
    Layer& out = net_.layer(data_.outputs[o].layer);
    ProfileRange range(profiler, ProfilePhase::Loss, out.name());
    float* delta = write_deltas ? out.delta() : nullptr;
    if (activations_deferred && out.activation_deferrable()) {
      be.activate_loss_accumulate(out.kernel_activation(), params_[o], out.activations(), tv, rows,
                                  cols, delta, sum);
    } else
      be.loss_accumulate(params_[o], out.activations(), tv, rows, cols, delta, sum);
  }
}

}  // namespace nn
