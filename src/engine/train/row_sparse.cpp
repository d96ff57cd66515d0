// Row-sparse updates of sparse input layers' matrices: which matrices qualify, the batch's
// distinct items, and the closed-form catch-up of skipped steps (see row_sparse.h).
#include "train/row_sparse.h"

#include <algorithm>

#include "backend/cuda_paths.h"
#include "config/enum_names.h"
#include "core/error.h"
#include "data/batch.h"
#include "layers/fully_connected_layer.h"
#include "layers/input_layer.h"

namespace nn {

const char* to_string(SparseUpdateMode m) {
  switch (m) {
    case SparseUpdateMode::Exact:
      return "Exact";
    case SparseUpdateMode::Dense:
      return "Dense";
    case SparseUpdateMode::Lazy:
      return "Lazy";
  }
  return "?";
}

SparseUpdateMode sparse_update_mode(const std::string& name) {
  const std::string wanted = to_lower(name);
  for (SparseUpdateMode m :
       {SparseUpdateMode::Exact, SparseUpdateMode::Dense, SparseUpdateMode::Lazy})
    if (wanted == to_lower(to_string(m))) return m;
  throw ConfigError("sparse update \"" + name + "\": expected Exact, Dense or Lazy");
}

namespace {

// Why matrix `c` of `layer` keeps the dense update ("" when it can be row-sparse).
std::string dense_reason(const Connection& c, const OptimizerSettings& o, SparseUpdateMode mode) {
  if (c.shared || c.transposed || c.matrix_users() > 1) return "its matrix is shared";
  const Parameter& m = c.matrix();
  if (m.max_column_norm > 0.0f) return "WeightNorm constrains whole columns every step";
  if (mode == SparseUpdateMode::Lazy) return "";
  if (m.regularize && (o.lambda != 0.0f || o.lambda1 != 0.0f))
    return "L1/L2 decay moves every row every step (\"SparseUpdate\": \"Lazy\" decays the touched "
           "rows only)";
  if (!math::skips_have_closed_form(o.kind))
    return std::string(to_string(o.kind)) +
           "'s skipped steps have no closed form (\"SparseUpdate\": \"Lazy\" updates the touched "
           "rows only, as LazyAdam)";
  return "";
}

}  // namespace

bool row_sparse_on(const Backend& backend, SparseUpdateMode mode) {
  if (mode == SparseUpdateMode::Dense) return false;
  // Exact gives the dense update's values, so on CUDA the dense kernels are used unless the row
  // kernels are turned on: they passed on an H200 but were slower there (backend/cuda_paths.h).
  return mode == SparseUpdateMode::Lazy || backend.name() != "cuda" ||
         cuda_path_on(CudaPath::RowSparseUpdates);
}

std::unique_ptr<RowSparseUpdates> RowSparseUpdates::create(
    Network& net, const BoundData& data, Optimizer& optimizer, SparseUpdateMode mode,
    const std::function<bool(const Parameter*)>& excluded, std::vector<std::string>& notes) {
  if (mode == SparseUpdateMode::Dense) return nullptr;
  if (!row_sparse_on(net.backend(), mode)) {
    const CudaPathInfo& path = cuda_path_info(CudaPath::RowSparseUpdates);
    notes.push_back(
        std::string("dense updates of the sparse inputs' matrices: the CUDA "
                    "backend's row-sparse kernels are off by default (") +
        (*path.passed ? "slower than dense updates on a GPU" : "not yet passed on a GPU") + "; " +
        path.variable + "=" + path.on + " turns them on)");
    return nullptr;
  }
  const OptimizerSettings& o = optimizer.settings();
  const bool catch_up = mode == SparseUpdateMode::Exact && math::skips_change_state(o.kind);
  std::unique_ptr<RowSparseUpdates> r(new RowSparseUpdates(net, optimizer, catch_up));
  for (size_t slot = 0; slot < data.inputs.size(); ++slot) {
    if (!data.inputs[slot].dataset->is_sparse()) continue;
    auto* input = dynamic_cast<InputLayer*>(&net.layer(data.inputs[slot].layer));
    if (!input || !input->has_sparse_output()) continue;
    bool indexed = false, whole_indexed = false;
    for (const LayerSpec& spec : net.spec().layers) {
      auto* layer = dynamic_cast<FullyConnectedLayer*>(&net.layer(spec.name));
      if (!layer) continue;
      for (auto& c : layer->connections()) {
        if (c->source != input) continue;
        Parameter& m = c->matrix();
        if (m.locked || (excluded && excluded(&m))) continue;
        const std::string why = dense_reason(*c, o, mode);
        if (!why.empty()) {
          notes.push_back("dense update of " + m.name + ": " + why);
          continue;
        }
        Tracked t;
        t.p = &m;
        t.slot = slot;
        t.input = input;
        t.whole = layer->sharded();
        t.rows = input->units();
        t.width = static_cast<uint32_t>(m.size() / std::max<uint32_t>(t.rows, 1));
        t.last.assign(catch_up ? t.rows : 0, 0);
        m.row_grad.enabled = true;
        m.row_grad.width = t.width;
        m.grad.reset();  // the dense gradient is never written
        (t.whole ? whole_indexed : indexed) = true;
        r->tracked_.push_back(std::move(t));
        notes.push_back(
            "row-sparse update of " + m.name + " (" + to_string(mode) +
            (mode == SparseUpdateMode::Lazy ? ": untouched rows' optimizer state is not decayed)"
             : catch_up ? ": skipped steps caught up in closed form when a row is next used)"
                        : ": equal to the dense update)"));
      }
    }
    if (indexed) r->slots_.push_back(slot);
    if (whole_indexed) r->whole_slots_.push_back(slot);
  }
  if (r->tracked_.empty()) return nullptr;
  r->marks_.resize(r->slots_.size());
  r->whole_marks_.resize(r->whole_slots_.size());
  return r;
}

RowSparseUpdates::~RowSparseUpdates() {
  for (Tracked& t : tracked_) {
    t.p->row_grad = RowGradient{};
    t.p->grad.resize(net_.backend(), t.p->size());
  }
}

void RowSparseUpdates::index(HostBatch& batch, HostBatch* whole) {
  for (size_t i = 0; i < slots_.size(); ++i) index_touched(batch.sparse.at(slots_[i]), marks_[i]);
  if (whole_slots_.empty()) return;
  NN_CHECK(whole != nullptr, "row-sparse rows of a split layer without the whole minibatch");
  for (size_t i = 0; i < whole_slots_.size(); ++i)
    index_touched(whole->sparse.at(whole_slots_[i]), whole_marks_[i]);
}

const SparseBatch& RowSparseUpdates::batch_of(const Tracked& t, const HostBatch& batch,
                                              const HostBatch* whole) {
  NN_CHECK(!t.whole || whole != nullptr, "row-sparse rows of a split layer without the minibatch");
  return (t.whole ? *whole : batch).sparse.at(t.slot);
}

const SparseView& RowSparseUpdates::view_of(const Tracked& t) {
  return t.whole ? t.input->full_sparse_output() : t.input->sparse_output();
}

void RowSparseUpdates::agree(Communicator& comm, HostBatch& batch) {
  if (comm.size() == 1) return;
  for (const size_t slot : slots_) {
    SparseBatch& b = batch.sparse.at(slot);
    NN_CHECK(b.indexed, "row-sparse agreement on an unindexed batch");
    const auto mine = static_cast<uint64_t>(b.touched.size());
    std::vector<uint64_t> counts(size_t(comm.size()));
    comm.all_gather(&mine, 1, counts.data());
    uint64_t total = 0;
    for (const uint64_t c : counts) total += c;
    agree_items_.resize(total);
    comm.all_gather_v(b.touched.data(), agree_items_.data(),
                      std::vector<size_t>(counts.begin(), counts.end()));
    // Every rank's list is ascending: their sorted union, the same on every rank.
    std::sort(agree_items_.begin(), agree_items_.end());
    agree_items_.erase(std::unique(agree_items_.begin(), agree_items_.end()), agree_items_.end());
    widen_touched(b, agree_items_, agree_mark_);
  }
}

std::vector<const Parameter*> RowSparseUpdates::parameters() const {
  std::vector<const Parameter*> out;
  for (const Tracked& t : tracked_) out.push_back(t.p);
  return out;
}

void RowSparseUpdates::reduce(Communicator& comm, float weight, const HostBatch& batch) {
  Backend& be = net_.backend();
  for (Tracked& t : tracked_) {
    if (t.whole) continue;  // a split layer's rows: each rank holds its own units' alone
    const SparseBatch& b = batch.sparse.at(t.slot);
    NN_CHECK(b.indexed, "row-sparse reduction of an unindexed batch");
    RowGradient& rg = t.p->row_grad;
    const auto count = static_cast<uint32_t>(b.touched.size());
    const size_t n = size_t(count) * t.width;
    // A rank without rows ran no backward pass (or an empty one): it adds zeros, and its
    // gradient's rows are the minibatch's, as every rank's.
    if (weight == 0.0f || rg.count != count || rg.values.size() != n) {
      rg.values.resize(be, n);
      be.fill(rg.values.data(), n, 0.0f);
      rg.width = t.width;
      rg.count = count;
      rg.rows = t.input->sparse_output().touched;
    }
    if (n == 0) continue;
    if (be.host_memory()) {
      if (weight != 1.0f) be.scale(rg.values.data(), n, weight);
      comm.all_reduce_raw(rg.values.data(), n, CommType::Float32, ReduceOp::Sum);
    } else {
      host_rows_.resize(n);
      be.download(host_rows_.data(), rg.values.data(), n * sizeof(float));
      if (weight != 1.0f)
        for (float& v : host_rows_) v *= weight;
      comm.all_reduce_raw(host_rows_.data(), n, CommType::Float32, ReduceOp::Sum);
      be.upload(rg.values.data(), host_rows_.data(), n * sizeof(float));
    }
  }
}

bool RowSparseUpdates::updates_rows_of(const std::string& input) const {
  for (const Tracked& t : tracked_)
    if (t.input->name() == input) return true;
  return false;
}

void RowSparseUpdates::begin(uint64_t step) {
  base_ = step;
  for (Tracked& t : tracked_) std::fill(t.last.begin(), t.last.end(), 0u);
}

const math::SkipFactors& RowSparseUpdates::factors_of(uint32_t skipped) {
  if (skipped >= factor_cache_.size()) {
    const size_t n = std::max<size_t>(size_t(skipped) + 1, factor_cache_.size() * 2);
    factor_cache_.resize(n);
    factor_known_.resize(n, false);
  }
  if (!factor_known_[skipped]) {
    const OptimizerSettings& o = optimizer_.settings();
    factor_cache_[skipped] = math::skip_factors(o.kind, o.mu, skipped);
    factor_known_[skipped] = true;
  }
  return factor_cache_[skipped];
}

void RowSparseUpdates::before_forward(const HostBatch& batch, const HostBatch* whole,
                                      uint64_t step) {
  if (!catch_up_) return;
  NN_CHECK(step > base_, "row-sparse catch-up before its base step");
  const auto now = static_cast<uint32_t>(step - base_);  // this update, relative to base_
  for (Tracked& t : tracked_) {
    const SparseBatch& b = batch_of(t, batch, whole);
    NN_CHECK(b.indexed, "row-sparse catch-up of an unindexed batch");
    host_factors_.resize(2 * b.touched.size());
    bool any = false;
    for (size_t i = 0; i < b.touched.size(); ++i) {
      uint32_t& last = t.last[b.touched[i]];
      const uint32_t skipped = now - 1 - last;
      last = now;
      const math::SkipFactors& f = factors_of(skipped);
      host_factors_[2 * i] = f.decay;
      host_factors_[2 * i + 1] = f.w_per_v;
      any |= skipped > 0;
    }
    if (!any) continue;
    factors_.assign(net_.backend(), host_factors_);
    const SparseView& view = view_of(t);
    NN_CHECK(view.touched != nullptr && view.touched_count == b.touched.size(),
             "row-sparse catch-up before the batch's inputs were loaded");
    optimizer_.skip_rows(*t.p, t.width, view.touched, factors_.data(), view.touched_count);
  }
}

void RowSparseUpdates::flush(uint64_t step) {
  if (catch_up_ && step > base_) {
    const auto now = static_cast<uint32_t>(step - base_);
    for (Tracked& t : tracked_) {
      host_factors_.resize(2 * size_t(t.rows));
      bool any = false;
      for (uint32_t r = 0; r < t.rows; ++r) {
        const uint32_t skipped = now - t.last[r];
        const math::SkipFactors& f = factors_of(skipped);
        host_factors_[2 * size_t(r)] = f.decay;
        host_factors_[2 * size_t(r) + 1] = f.w_per_v;
        any |= skipped > 0;
      }
      if (!any) continue;
      factors_.assign(net_.backend(), host_factors_);
      optimizer_.skip_rows(*t.p, t.width, nullptr, factors_.data(), t.rows);
    }
  }
  begin(step);
}

}  // namespace nn
