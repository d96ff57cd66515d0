// The public Evaluator: a Network of its own whose weights are views of the Model's
// (Network::share_weights_of), fed from caller batches in chunks, with top-K on the backend
// (Backend::top_k_filtered).
#include "nn/evaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

#include "api/model_impl.h"
#include "backend/device_array.h"
#include "core/error.h"
#include "layers/input_layer.h"
#include "predict/blocked_top_k.h"
#include "predict/predictor.h"

namespace nn::api {

// One input layer and the host staging of its current chunk.
struct InputSlot {
  InputLayer* layer = nullptr;
  bool sparse = false;
  SparseBatch csr;           // the current chunk, when the input layer is sparse
  std::vector<float> dense;  // the current chunk, when a CSR batch feeds a dense layer
};

struct Evaluator::Impl {
  const Model* model = nullptr;
  // The evaluator's own backend where the model's cannot be shared between threads (CUDA:
  // Backend::make_peer), so evaluators on different threads never meet in one stream or scratch
  // buffer; null where it can (the CPU). Declared before net: destroyed after it.
  std::unique_ptr<Backend> peer;
  // Set where the evaluator shares a backend that needs turns (CUDA without a peer): every call
  // that touches the backend holds it.
  std::mutex* turns = nullptr;
  std::unique_lock<std::mutex> turn() {
    return turns ? std::unique_lock<std::mutex>(*turns) : std::unique_lock<std::mutex>();
  }
  std::unique_ptr<Network> net;
  std::vector<InputSlot> slots;  // one per input layer, in the network's order
  uint32_t max_batch = 0;
  // top_k: a chunk's exclusions as CSR (ascending per row) on the host and the backend, and
  // the selected entries on the backend (only k per row are read back).
  std::vector<uint32_t> ex_ptr, ex_index;
  DeviceArray<uint32_t> d_ex_ptr, d_ex_index, d_top_index;
  DeviceArray<float> d_top_score;
  // top_k of a layer too wide to score whole: its column blocks (predict/blocked_top_k.h).
  BlockedTopK blocked;
  TopK top;

  Layer& scored(const std::string& name) {
    if (name.empty()) return *net->outputs().front();
    model->layer(name);  // ConfigError with the layer names and a suggestion when unknown
    Layer& l = net->layer(name);
    if (l.has_sparse_output())
      throw ConfigError("layer '" + name + "' is a sparse input layer; it has no outputs to read");
    return l;
  }
  // The batch of every slot (same order), checked: each input layer once, known names, equal
  // rows, columns matching the layer. A nameless single batch feeds a network's only input.
  std::vector<const Input*> resolve(const NamedInputs& inputs) const;
  // Loads rows [first, first + rows) of each slot's batch into its layer and runs the forward
  // pass, of every layer but `skip` when given (a layer scored in column blocks, left without
  // buffers).
  void forward(const std::vector<const Input*>& in, uint64_t first, uint32_t rows,
               const Layer* skip = nullptr);
  void load(InputSlot& slot, const Input& in, uint64_t first, uint32_t rows);
  std::string layer_names() const {
    std::string names;
    for (const InputSlot& s : slots) names += (names.empty() ? "" : ", ") + s.layer->name();
    return names;
  }
};

namespace {

void check_input(const Input& in, uint64_t units, const std::string& layer, const std::string& x) {
  // Fewer columns are the leading columns of the layer, the rest zero: a layer's width is the
  // dataset's rounded up (nn-generate aligns it to 128), which callers need not know.
  if (in.cols() > units)
    throw ConfigError(x + ": has " + std::to_string(in.cols()) + " columns; input layer '" + layer +
                      "' has " + std::to_string(units) + " units");
  if (in.is_csr) {
    const CsrInput& c = in.csr;
    if (c.rows && (!c.row_ptr || (!c.index && c.row_ptr[c.rows] > 0)))
      throw ConfigError(x + ": CSR input without row offsets or column indices");
    if (c.rows && c.row_ptr[0] != 0)
      throw ConfigError(x + ": CSR row offsets must start at 0 (got " +
                        std::to_string(c.row_ptr[0]) + ")");
    for (uint64_t r = 0; r < c.rows; ++r) {
      if (c.row_ptr[r + 1] < c.row_ptr[r])
        throw ConfigError(x + ": CSR row offsets decrease at row " + std::to_string(r));
      for (uint64_t e = c.row_ptr[r]; e < c.row_ptr[r + 1]; ++e)
        if (c.index[e] >= c.cols)
          throw ConfigError(x + ": row " + std::to_string(r) + " has column " +
                            std::to_string(c.index[e]) + ", but there are " +
                            std::to_string(c.cols) + " columns");
    }
  } else if (in.dense.rows && !in.dense.values) {
    throw ConfigError(x + ": dense input without values");
  }
}

}  // namespace

std::vector<const Input*> Evaluator::Impl::resolve(const NamedInputs& inputs) const {
  std::vector<const Input*> by_slot(slots.size(), nullptr);
  std::vector<std::string> arg(slots.size());
  for (const auto& [name, in] : inputs) {
    size_t i = 0;
    if (name.empty()) {
      if (slots.size() != 1)
        throw ConfigError("x: the network has " + std::to_string(slots.size()) + " input layers (" +
                          layer_names() + "); give one batch per layer, by name");
    } else {
      while (i < slots.size() && slots[i].layer->name() != name) ++i;
      if (i == slots.size())
        throw ConfigError("x['" + name + "']: no input layer of that name; input layers are " +
                          layer_names());
    }
    if (by_slot[i]) throw ConfigError("x['" + slots[i].layer->name() + "']: given more than once");
    by_slot[i] = &in;
    arg[i] = name.empty() ? "x" : "x['" + name + "']";
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!by_slot[i])
      throw ConfigError("x: no batch for input layer '" + slots[i].layer->name() +
                        "'; input layers are " + layer_names());
    check_input(*by_slot[i], slots[i].layer->units(), slots[i].layer->name(), arg[i]);
    if (by_slot[i]->rows() != by_slot[0]->rows())
      throw ConfigError(arg[i] + ": has " + std::to_string(by_slot[i]->rows()) + " rows; " +
                        arg[0] + " has " + std::to_string(by_slot[0]->rows()));
  }
  return by_slot;
}

void Evaluator::Impl::forward(const std::vector<const Input*>& in, uint64_t first, uint32_t rows,
                              const Layer* skip) {
  if (rows > net->max_batch() || net->unallocated() != skip)
    net->set_max_batch(std::max(rows, net->max_batch()), 0, skip);
  for (size_t i = 0; i < slots.size(); ++i) load(slots[i], *in[i], first, rows);
  LayerContext ctx{net->backend(), rows, false, 0, 0};
  net->forward(ctx, skip);
}

void Evaluator::Impl::load(InputSlot& slot, const Input& in, uint64_t first, uint32_t rows) {
  Backend& be = net->backend();
  const uint64_t cols = in.cols();  // may be fewer than the layer's units: the rest are zero
  SparseBatch& csr = slot.csr;
  std::vector<float>& dense = slot.dense;
  InputLayer* input = slot.layer;
  const uint64_t units = input->units();
  // The layer's row normalisation, as model/batch_loader.h applies it to dataset batches.
  const bool l2 = input->spec().normalize == RowNormalization::L2;
  if (slot.sparse) {
    csr.rows = rows;
    csr.cols = static_cast<uint32_t>(units);
    csr.row_ptr.assign(1, 0);
    csr.index.clear();
    csr.value.clear();
    for (uint32_t r = 0; r < rows; ++r) {
      if (in.is_csr) {
        const CsrInput& c = in.csr;
        for (uint64_t e = c.row_ptr[first + r]; e < c.row_ptr[first + r + 1]; ++e) {
          csr.index.push_back(c.index[e]);
          csr.value.push_back(c.values ? c.values[e] : 1.0f);
        }
      } else {
        const float* x = in.dense.values + (first + r) * cols;
        for (uint64_t j = 0; j < cols; ++j)
          if (x[j] != 0.0f) {
            csr.index.push_back(static_cast<uint32_t>(j));
            csr.value.push_back(x[j]);
          }
      }
      csr.row_ptr.push_back(static_cast<uint32_t>(csr.index.size()));
    }
    if (l2) normalize_rows_l2(csr);
    input->load_sparse(be, csr);
  } else if (in.is_csr) {
    const CsrInput& c = in.csr;
    dense.assign(size_t(rows) * units, 0.0f);
    for (uint32_t r = 0; r < rows; ++r)
      for (uint64_t e = c.row_ptr[first + r]; e < c.row_ptr[first + r + 1]; ++e)
        dense[size_t(r) * units + c.index[e]] += c.values ? c.values[e] : 1.0f;
    if (l2) normalize_rows_l2(dense.data(), rows, units);
    input->load_dense(be, dense.data(), rows);
  } else if (cols < units || l2) {
    // Padded to the layer's width on the host (the layer reads rows of `units` floats), and
    // normalised there when the layer asks for it (the zeros of the padding change no norm).
    dense.assign(size_t(rows) * units, 0.0f);
    for (uint32_t r = 0; r < rows; ++r)
      std::copy_n(in.dense.values + (first + r) * cols, cols, dense.data() + size_t(r) * units);
    if (l2) normalize_rows_l2(dense.data(), rows, units);
    input->load_dense(be, dense.data(), rows);
  } else {
    input->load_dense(be, in.dense.values + first * cols, rows);
  }
}

Evaluator::Evaluator(std::shared_ptr<const Model> model, uint32_t max_batch)
    : model_(std::move(model)), impl_(std::make_unique<Impl>()) {
  if (!model_) throw ConfigError("Evaluator: no model");
  if (max_batch == 0) throw ConfigError("max_batch: must be positive");
  Model::Impl& m = model_->impl();
  impl_->model = model_.get();
  impl_->peer = m.backend->make_peer();
  // A backend that gives no peer and may not be shared (CUDA without peer backends): its
  // evaluators take turns.
  if (!impl_->peer && !m.backend->shareable_between_threads()) impl_->turns = &m.backend_turns;
  Backend& backend = impl_->peer ? *impl_->peer : *m.backend;
  const std::unique_lock<std::mutex> turn = impl_->turn();
  impl_->net = std::make_unique<Network>(backend, m.net->spec(), m.sparse_inputs);
  impl_->net->share_weights_of(*m.net);
  for (InputLayer* in : impl_->net->inputs()) {
    impl_->slots.emplace_back();
    impl_->slots.back().layer = in;
    impl_->slots.back().sparse = in->has_sparse_output();
  }
  if (impl_->slots.empty()) throw ConfigError("'" + m.name + "' has no input layer");
  impl_->max_batch = max_batch;
}

Evaluator::~Evaluator() {
  if (!impl_) return;
  const std::unique_lock<std::mutex> turn = impl_->turn();
  impl_->net.reset();  // its arrays are freed on the shared backend
}

uint64_t Evaluator::units(const std::string& layer) const {
  return impl_->scored(layer).units();
}

std::vector<std::string> Evaluator::input_layers() const {
  std::vector<std::string> names;
  for (const InputSlot& s : impl_->slots) names.push_back(s.layer->name());
  return names;
}

void Evaluator::outputs(const Input& in, const std::string& layer_name, float* out) {
  outputs(NamedInputs{{"", in}}, layer_name, out);
}

void Evaluator::top_k(const Input& in, uint32_t k, const std::string& layer_name,
                      const Exclusion* exclude, uint32_t* index, float* score) {
  top_k(NamedInputs{{"", in}}, k, layer_name, exclude, index, score);
}

void Evaluator::outputs(const NamedInputs& inputs, const std::string& layer_name, float* out) {
  const std::unique_lock<std::mutex> turn = impl_->turn();
  Layer& layer = impl_->scored(layer_name);
  const std::vector<const Input*> in = impl_->resolve(inputs);
  const uint64_t total = in.front()->rows();
  Backend& be = impl_->net->backend();
  for (uint64_t first = 0; first < total; first += impl_->max_batch) {
    const uint32_t rows = uint32_t(std::min<uint64_t>(impl_->max_batch, total - first));
    impl_->forward(in, first, rows);
    layer.download_activations(be, rows, layer.units(), out + first * layer.units());
  }
}

void Evaluator::top_k(const NamedInputs& inputs, uint32_t k, const std::string& layer_name,
                      const Exclusion* exclude, uint32_t* index, float* score) {
  const std::unique_lock<std::mutex> turn = impl_->turn();
  Layer& layer = impl_->scored(layer_name);
  const uint32_t units = layer.units();
  if (k < 1 || k > units)
    throw ConfigError("k: must be between 1 and " + std::to_string(units) +
                      " (the units of layer '" + layer.name() + "'); got " + std::to_string(k));
  const std::vector<const Input*> in = impl_->resolve(inputs);
  const uint64_t total = in.front()->rows();
  if (exclude) {
    if (exclude->rows != total)
      throw ConfigError("exclude: has " + std::to_string(exclude->rows) + " rows; x has " +
                        std::to_string(total));
    for (uint64_t r = 0; r < exclude->rows; ++r)
      if (exclude->row_ptr[r + 1] < exclude->row_ptr[r])
        throw ConfigError("exclude: row offsets decrease at row " + std::to_string(r));
  }
  Backend& be = impl_->net->backend();
  Impl& m = *impl_;
  // A layer whose scores of a chunk would pass predict/blocked_top_k.h's threshold is scored in
  // column blocks when it can be: the same results without the chunk's whole scores.
  uint32_t block =
      score_block_columns(kScoreBlockAuto, uint32_t(std::min<uint64_t>(m.max_batch, total)), units);
  if (block > 0 && !blocked_scoring_obstacle(*m.net, layer.name()).empty()) block = 0;
  for (uint64_t first = 0; first < total; first += m.max_batch) {
    const uint32_t rows = uint32_t(std::min<uint64_t>(m.max_batch, total - first));
    m.forward(in, first, rows, block > 0 ? &layer : nullptr);
    TopKFilter filter;
    if (exclude) {
      // top_k_filtered wants each row's excluded columns ascending.
      m.ex_ptr.assign(1, 0);
      m.ex_index.clear();
      for (uint32_t r = 0; r < rows; ++r) {
        const size_t at = m.ex_index.size();
        m.ex_index.insert(m.ex_index.end(), exclude->index + exclude->row_ptr[first + r],
                          exclude->index + exclude->row_ptr[first + r + 1]);
        std::sort(m.ex_index.begin() + at, m.ex_index.end());
        if (m.ex_index.size() > std::numeric_limits<uint32_t>::max())
          throw ConfigError("exclude: more than 2^32 - 1 entries in " + std::to_string(rows) +
                            " rows; use a smaller max_batch");
        m.ex_ptr.push_back(static_cast<uint32_t>(m.ex_index.size()));
      }
      if (!m.ex_index.empty()) {
        m.d_ex_ptr.assign(be, m.ex_ptr);
        m.d_ex_index.assign(be, m.ex_index);
        filter.exclude_ptr = m.d_ex_ptr.data();
        filter.exclude_index = m.d_ex_index.data();
      }
    }
    const size_t n = size_t(rows) * k;
    if (block > 0) {
      auto& fc = static_cast<FullyConnectedLayer&>(layer);
      const LayerContext ctx{be, rows, false, 0, 0};
      // Row r's exclusions are m.ex_index[ex_ptr[r], ex_ptr[r + 1]), ascending.
      auto row_filter = [&](uint64_t r) {
        RowFilter f;
        if (!exclude) return f;
        f.exclude = m.ex_index.data() + m.ex_ptr[r];
        f.excluded = m.ex_ptr[r + 1] - m.ex_ptr[r];
        return f;
      };
      // Over the whole stride of padded rows, as nn-predict's blocks (predictor_top_k.cpp).
      m.blocked.run(
          be, rows, layer.stride(), block, be.gemm_column_tile(), k, units, 0, row_filter,
          [&](uint32_t col, uint32_t count, float* out) {
            fc.forward_columns(ctx, col, count, out);
          },
          m.top);
      std::copy(m.top.index.begin(), m.top.index.end(), index + first * k);
      std::copy(m.top.score.begin(), m.top.score.end(), score + first * k);
      continue;
    }
    m.d_top_index.resize(be, n);
    m.d_top_score.resize(be, n);
    be.top_k_filtered(layer.activations(), rows, layer.stride(), units, k, filter,
                      m.d_top_score.data(), m.d_top_index.data());
    be.download(index + first * k, m.d_top_index.data(), n * sizeof(uint32_t));
    be.download(score + first * k, m.d_top_score.data(), n * sizeof(float));
  }
}

}  // namespace nn::api
