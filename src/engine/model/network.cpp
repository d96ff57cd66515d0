// Network construction, initialisation, forward/backward ordering and file conversion.
#include "model/network.h"

#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <tuple>

#include "config/layer_shapes.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "core/random.h"
#include "layers/convolutional_layer.h"
#include "layers/layer_registry.h"
#include "layers/pooling_layer.h"
#include "model/binding.h"

namespace nn {
namespace {

std::string where(const NetworkSpec& spec, const LayerSpec& l) {
  return (spec.source.empty() ? std::string("network") : spec.source) + ": layer '" + l.name + "'";
}

}  // namespace

// Fully connected weights are source units x units floats each; with their gradients and up to
// two optimizer moments that is 4 copies. Checked against the memory budget before any is made.
void Network::check_weight_memory() const {
  std::optional<uint64_t> total = 0;
  for (const auto& layer : layers_) {
    const LayerSpec& l = layer->spec();
    const bool variational = l.type == LayerType::Variational;
    if ((l.type != LayerType::FullyConnected && !variational) || l.kind == LayerKind::Input)
      continue;
    // A model-parallel layer holds its slice of the units only; a Variational layer's weights
    // produce a mean and a log-variance per unit.
    const uint64_t held =
        layer->padded() ? layer->stride() : uint64_t(layer->local_units()) * (variational ? 2 : 1);
    for (const Layer* src : layer->sources()) {
      const auto params = checked_add(checked_mul(src->units(), held).value_or(UINT64_MAX), held);
      const auto bytes = params ? checked_mul(*params, 4 * sizeof(float)) : std::nullopt;
      total = total && bytes ? checked_add(*total, *bytes) : std::nullopt;
      const std::string problem = over_budget(total);
      if (!problem.empty())
        throw ConfigError(where(spec_, l) + ": weights from '" + src->spec().name + "' (" +
                          std::to_string(src->units()) + " x " + std::to_string(l.units()) +
                          " parameters, with the layers before) " + problem);
    }
  }
}

Network::Network(Backend& backend, NetworkSpec spec,
                 const std::map<std::string, bool>& sparse_inputs, const NetworkParallel& parallel)
    : backend_(backend), spec_(std::move(spec)) {
  // Convolutional and Pooling layers take their sizes from their sources (DSSTNE's derived
  // dimensions); a no-op for specs that already carry them.
  derive_layer_dimensions(spec_);
  std::map<std::string, Layer*> by_name;
  for (uint32_t i = 0; i < spec_.layers.size(); ++i) {
    const LayerSpec& l = spec_.layers[i];
    if (l.n_auto)
      throw ConfigError(where(spec_, l) + ": size \"auto\" was not resolved against a dataset");
    if (l.units() == 0) throw ConfigError(where(spec_, l) + ": N must be positive");
    // Units are counted in 32 bits (Layer::units); a larger product must not wrap around.
    if (l.units() > UINT32_MAX)
      throw ConfigError(
          where(spec_, l) + ": N = " + std::to_string(l.n[0]) + " x " + std::to_string(l.n[1]) +
          " x " + std::to_string(l.n[2]) + " x " + std::to_string(l.n[3]) + " = " +
          (l.units() == UINT64_MAX ? std::string("more than 2^64") : std::to_string(l.units())) +
          " units; a layer has at most 4294967295 units");
    auto it = sparse_inputs.find(l.name);
    std::unique_ptr<Layer> layer =
        create_layer(l, i, it != sparse_inputs.end() && it->second, where(spec_, l));
    if (auto* pool = dynamic_cast<PoolingLayer*>(layer.get()))  // LRN settings are network-wide
      pool->set_lrn({spec_.lrn_k, spec_.lrn_alpha, spec_.lrn_beta, spec_.lrn_n});
    by_name[l.name] = layer.get();
    layers_.push_back(std::move(layer));
  }
  // Wire sources and skips.
  for (auto& layer : layers_) {
    const LayerSpec& l = layer->spec();
    for (const auto& s : l.sources) {
      auto it = by_name.find(s);
      if (it == by_name.end()) throw ConfigError(where(spec_, l) + ": unknown Source '" + s + "'");
      if (it->second == layer.get())
        throw ConfigError(where(spec_, l) + ": a layer cannot be its own Source");
      layer->add_source(it->second);
    }
    for (const auto& s : l.skips) {
      auto it = by_name.find(s);
      if (it == by_name.end()) throw ConfigError(where(spec_, l) + ": unknown Skip '" + s + "'");
      if (it->second->units() != layer->units())
        throw ConfigError(where(spec_, l) + ": Skip '" + s + "' has " +
                          std::to_string(it->second->units()) + " units, expected " +
                          std::to_string(layer->units()));
      if (it->second->has_sparse_output())
        throw ConfigError(where(spec_, l) + ": Skip '" + s + "' is a sparse input");
      layer->add_skip(it->second);
    }
    if (l.kind != LayerKind::Input && l.sources.empty())
      throw ConfigError(where(spec_, l) + ": has no Source");
  }
  // Topological order (depth-first over sources and skips), rejecting cycles.
  std::map<Layer*, int> state;  // 0 new, 1 visiting, 2 done
  std::function<void(Layer*)> visit = [&](Layer* x) {
    if (state[x] == 2) return;
    if (state[x] == 1) throw ConfigError(where(spec_, x->spec()) + ": the layer graph has a cycle");
    state[x] = 1;
    for (Layer* s : x->sources()) visit(s);
    for (Layer* s : x->skips()) visit(s);
    state[x] = 2;
    order_.push_back(x);
  };
  for (auto& layer : layers_) visit(layer.get());
  if (parallel.comm && parallel.comm->size() > 1) plan_parallel(parallel);
  plan_row_padding();
  check_weight_memory();
  for (auto& layer : layers_) layer->build(backend_);
  link_layer_features();
  if (outputs().empty()) throw ConfigError(spec_.source + ": the network has no Output layer");
  if (inputs().empty()) throw ConfigError(spec_.source + ": the network has no Input layer");
}

std::vector<LayerCostInput> Network::parallel_inputs(int ranks, std::vector<Layer*>* layers) const {
  std::set<std::string> read_by_others, shared_owners;
  for (const LayerSpec& l : spec_.layers) {
    for (const auto& s : l.sources) read_by_others.insert(s);
    for (const auto& s : l.skips) read_by_others.insert(s);
    for (const auto& w : l.shared_weights) shared_owners.insert(w.source_output_layer);
  }
  const bool softmax_loss_splits =
      spec_.error_function == ErrorFunction::CrossEntropy ||
      spec_.error_function == ErrorFunction::ScaledMarginalCrossEntropy;
  std::vector<LayerCostInput> in;
  for (auto& layer : layers_) {
    const LayerSpec& l = layer->spec();
    if (l.kind == LayerKind::Input) continue;
    LayerCostInput c;
    c.name = l.name;
    c.fully_connected = l.type == LayerType::FullyConnected;
    c.output = l.kind == LayerKind::Output;
    c.softmax = l.activation == Activation::SoftMax;
    c.units = layer->units();
    c.requested = l.parallel;
    for (Layer* src : layer->sources())
      c.sources.push_back({src->units(), src->kind() == LayerKind::Input, src->needs_delta()});
    std::string why;
    if (!layer->can_shard(&why))
      c.cannot_split = why;
    else if (c.units < uint64_t(ranks))
      c.cannot_split = "it has fewer units than there are processes";
    else if (c.output && read_by_others.count(l.name))
      c.cannot_split = "other layers read this Output layer";
    else if (shared_owners.count(l.name))
      c.cannot_split = "another layer shares its weights (SharedWeights)";
    else if (c.output && c.softmax && !softmax_loss_splits)
      c.cannot_split = std::string("a SoftMax output with ErrorFunction ") +
                       to_string(spec_.error_function) +
                       " needs whole rows (CrossEntropy and ScaledMarginalCrossEntropy split)";
    in.push_back(c);
    if (layers) layers->push_back(layer.get());
  }
  return in;
}

void Network::plan_parallel(const NetworkParallel& parallel) {
  Communicator& comm = *parallel.comm;
  ParallelSettings settings = parallel.settings;
  settings.ranks = comm.size();
  std::vector<Layer*> who;
  const std::vector<LayerCostInput> in = parallel_inputs(comm.size(), &who);
  if (parallel.predict) {
    // Every rank measures its own machine; rank 0's figures decide, so the ranks agree.
    // (An answer of another length: no figures, the bytes rule; the last entry says which.)
    const std::vector<ParallelSettings::Predicted> mine = parallel.predict(*this, in, settings);
    std::vector<double> seconds(2 * in.size() + 1, 0.0);
    if (mine.size() == in.size()) {
      for (size_t i = 0; i < in.size(); ++i) {
        seconds[2 * i] = mine[i].data_s;
        seconds[2 * i + 1] = mine[i].model_s;
      }
      seconds.back() = 1.0;
    }
    comm.broadcast(seconds.data(), seconds.size(), 0);
    settings.predicted.clear();
    if (seconds.back() == 1.0)
      for (size_t i = 0; i < in.size(); ++i)
        settings.predicted.push_back({seconds[2 * i], seconds[2 * i + 1]});
  }
  plan_ = choose_parallel(in, settings);
  for (size_t i = 0; i < plan_.size(); ++i) {
    if (!plan_[i].model_parallel) continue;
    Layer* layer = who[i];
    ShardInfo shard;
    shard.sharded = true;
    shard.rank = comm.rank();
    shard.ranks = comm.size();
    std::tie(shard.first, shard.count) = unit_range(layer->units(), comm.rank(), comm.size());
    shard.comm = &comm;
    layer->set_shard(shard);
    for (Layer* src : layer->sources()) src->set_feeds_sharded(true);
    model_parallel_ = true;
  }
}

void Network::plan_row_padding() {
  const uint32_t align = backend_.row_alignment();
  if (align <= 1) return;
  // Whatever reads a layer's activations or uses its weights from outside must know of the
  // padding; only the losses, predictions and files here do, so no other layer may.
  std::set<std::string> used_by_others;
  for (const LayerSpec& l : spec_.layers) {
    for (const auto& s : l.sources) used_by_others.insert(s);
    for (const auto& s : l.skips) used_by_others.insert(s);
    for (const auto& w : l.shared_weights) used_by_others.insert(w.source_output_layer);
  }
  for (auto& layer : layers_) {
    const uint64_t units = layer->units();
    if (units % align == 0 || used_by_others.count(layer->name()) || !layer->can_pad_rows(nullptr))
      continue;
    const uint64_t stride = (units + align - 1) / align * align;
    if (stride > UINT32_MAX) continue;
    layer->set_row_stride(uint32_t(stride));
  }
}

std::vector<std::string> Network::padding_notes() const {
  std::vector<std::string> out;
  for (const auto& layer : layers_)
    if (layer->padded())
      out.push_back("rows padded: layer '" + layer->name() + "' holds its " +
                    std::to_string(layer->units()) + " units in rows of " +
                    std::to_string(layer->stride()) + " floats (row alignment " +
                    std::to_string(backend_.row_alignment()) + ")");
  return out;
}

void Network::link_layer_features() {
  // Output layers whose activation the loss may apply (Backend::activate_loss_accumulate): no
  // other layer reads their activations during the forward pass (as a source or a skip), and
  // their forward pass ends with the activation.
  std::set<const Layer*> read;
  for (auto& layer : layers_) {
    for (const Layer* s : layer->sources()) read.insert(s);
    for (const Layer* s : layer->skips()) read.insert(s);
  }
  for (auto& layer : layers_)
    layer->set_activation_deferrable(layer->kind() == LayerKind::Output &&
                                     layer->ends_with_activate() && !read.count(layer.get()));
  auto find_layer = [this](const std::string& n) { return find(n); };
  for (auto& layer : layers_) {
    const LayerSpec& l = layer->spec();
    // Every layer is built, so the weights named by SharedWeights exist now. Filter banks are
    // shared between convolutions only, matrices between fully connected layers only.
    if (auto* fc = dynamic_cast<FullyConnectedLayer*>(layer.get())) {
      for (size_t k = 0; k < l.shared_weights.size(); ++k) {
        const SharedWeightSpec& s = l.shared_weights[k];
        if (dynamic_cast<ConvolutionalLayer*>(find(s.source_output_layer)))
          throw ConfigError(where(spec_, l) + ": SharedWeights[" + std::to_string(k) +
                            "]: the weight '" + s.source_input_layer + "' -> '" +
                            s.source_output_layer +
                            "' is a convolution filter bank; a fully connected layer can only "
                            "share another fully connected layer's matrix");
      }
      fc->resolve_shared_weights(find_layer, where(spec_, l));
    } else if (auto* conv = dynamic_cast<ConvolutionalLayer*>(layer.get())) {
      conv->resolve_shared_weights(find_layer, where(spec_, l));
    } else if (!l.shared_weights.empty()) {
      throw ConfigError(where(spec_, l) +
                        ": SharedWeights is supported on FullyConnected and Convolutional layers "
                        "only");
    }
    // DSSTNE: Hidden layers marked Sparse (of any type: the penalty only reads activations);
    // the layer's p/beta where set (> 0), else the network's. On when the resulting beta > 0.
    if (l.kind == LayerKind::Hidden && l.sparse && layer->needs_delta()) {
      const float beta =
          l.sparseness_penalty_beta > 0 ? l.sparseness_penalty_beta : spec_.sparseness_penalty_beta;
      const float p =
          l.sparseness_penalty_p > 0 ? l.sparseness_penalty_p : spec_.sparseness_penalty_p;
      layer->set_sparseness_penalty(p, beta);
    }
  }
}

double Network::penalties(const LayerContext& ctx) {
  // Summed in the backend's memory like the training loop's sums, then read back once.
  DeviceArray<double> sum;
  sum.assign(backend_, std::vector<double>(1, 0.0));
  accumulate_penalties(ctx, sum.data());
  return sum.to_host()[0];
}

void Network::accumulate_penalties(const LayerContext& ctx, double* sum) {
  for (auto& layer : layers_) {
    layer->accumulate_sparseness_penalty(backend_, ctx.rows, sum);
    layer->accumulate_own_loss(ctx, sum);
  }
}

void Network::initialize(uint64_t seed) {
  const uint64_t s = mix64(seed ^ 0x5EEDu);
  for (auto& layer : layers_) layer->initialize(s);
}

void Network::load_arrays(const NetworkFile& file) {
  size_t cursor = 0;
  for (auto& layer : layers_) layer->load(file, cursor);
  if (cursor != file.weights.size())
    throw DataError("network file has " + std::to_string(file.weights.size()) +
                    " weights; the network uses " + std::to_string(cursor));
}

void Network::name_items(const std::vector<ExampleSet>& sets) {
  attach_feature_names(spec_, sets);
}

NetworkFile Network::to_file() const {
  NetworkFile f;
  f.spec = spec_;
  for (const auto& layer : layers_) layer->save(f);
  return f;
}

NetworkFile Network::to_file_view() const {
  NetworkFile f;
  f.spec = spec_;
  f.borrow_host_arrays = true;
  for (const auto& layer : layers_) layer->save(f);
  f.borrow_host_arrays = false;
  return f;
}

void Network::share_weights_of(Network& owner) {
  NN_CHECK(owner.layers_.size() == layers_.size(), "share_weights_of: networks differ");
  for (size_t i = 0; i < layers_.size(); ++i) {
    Layer& mine = *layers_[i];
    Layer& theirs = *owner.layers_[i];
    NN_CHECK(mine.name() == theirs.name(), "share_weights_of: layers differ");
    for (Parameter* p : mine.parameters()) {
      p->grad.reset();
      p->state.clear();
    }
    std::vector<DeviceArray<float>*> a = mine.inference_arrays(), b = theirs.inference_arrays();
    NN_CHECK(a.size() == b.size(), "share_weights_of: layer arrays differ");
    for (size_t j = 0; j < a.size(); ++j) {
      NN_CHECK(a[j]->size() == b[j]->size(), "share_weights_of: array sizes differ");
      a[j]->borrow(*b[j]);
    }
  }
}

void Network::set_max_batch(uint32_t rows, uint32_t global_rows, const Layer* unallocated) {
  global_rows = std::max(global_rows, rows);
  if (rows == max_batch_ && global_rows == max_global_batch_ && unallocated == unallocated_) return;
  if (unallocated)
    for (const auto& layer : layers_) {
      for (const Layer* src : layer->sources())
        NN_CHECK(src != unallocated, "an unallocated layer must not feed another");
      for (const Layer* skip : layer->skips())
        NN_CHECK(skip != unallocated, "an unallocated layer must not feed another");
    }
  // Activations, deltas and dropout masks: up to 3 floats per unit and row (sparse inputs hold
  // no dense activations: a million-item input costs nothing here). Model-parallel layers
  // hold their units of every row of the global batch as well.
  uint64_t units = 0, sharded_units = 0;
  for (const auto& layer : layers_) {
    if (layer->has_sparse_output() || layer.get() == unallocated) continue;
    if (layer->sharded()) sharded_units += layer->local_units();
    if (!layer->sharded() || layer->kind() != LayerKind::Output) units += layer->units();
    if (layer->feeds_sharded() && layer->kind() == LayerKind::Input)
      sharded_units += layer->units();
  }
  const auto per_row = checked_add(checked_mul(units, rows).value_or(UINT64_MAX),
                                   checked_mul(sharded_units, global_rows).value_or(UINT64_MAX));
  const std::string problem =
      over_budget(per_row ? checked_mul(*per_row, 3 * sizeof(float)) : std::nullopt);
  if (!problem.empty())
    throw ConfigError((spec_.source.empty() ? std::string("network") : spec_.source) +
                      ": a minibatch of " + std::to_string(rows) + " rows over " +
                      std::to_string(units) + " units in all layers " + problem +
                      "; use a smaller minibatch");
  for (auto& layer : layers_) {
    layer->set_max_global_rows(global_rows);
    layer->allocate(backend_, layer.get() == unallocated ? 0 : rows);
  }
  max_batch_ = rows;
  max_global_batch_ = global_rows;
  unallocated_ = unallocated;
}

void Network::forward(const LayerContext& ctx, const Layer* skip) {
  NN_CHECK(ctx.rows <= max_batch_, "batch larger than allocated");
  NN_CHECK(unallocated_ == nullptr || skip == unallocated_,
           "a forward pass over a layer without buffers");
  for (Layer* l : order_) {
    if (l == skip) continue;
    ProfileRange range(ctx.profiler, ProfilePhase::Forward, l->name());
    l->forward(ctx);
  }
}

void Network::backward(const LayerContext& ctx, const std::function<void(Layer&)>& after_layer,
                       const std::function<bool(Layer&)>& instead) {
  {
    ProfileRange range(ctx.profiler, ProfilePhase::Backward, "clear deltas");
    for (auto& layer : layers_) {
      if (auto* fc = dynamic_cast<FullyConnectedLayer*>(layer.get()))
        fc->zero_shared_gradients(backend_);
      else if (auto* conv = dynamic_cast<ConvolutionalLayer*>(layer.get()))
        conv->zero_shared_gradients(backend_);
    }
    for (Layer* l : order_)
      if (l->kind() == LayerKind::Hidden && l->needs_delta())
        backend_.fill(l->delta(), size_t(ctx.rows) * l->units(), 0.0f);
  }
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    // In reverse topological order every consumer has added its part of dE/da by now, so the
    // sparseness penalty's derivative completes it here, for every layer type alike.
    {
      ProfileRange range(ctx.profiler, ProfilePhase::Backward, (*it)->name());
      (*it)->add_sparseness_penalty_delta(backend_, ctx.rows);
      if (!instead || !instead(**it)) (*it)->backward(ctx);
    }
    if (after_layer) after_layer(**it);
  }
}

Layer* Network::find(const std::string& name) {
  for (auto& l : layers_)
    if (l->name() == name) return l.get();
  return nullptr;
}

Layer& Network::layer(const std::string& name) {
  if (Layer* l = find(name)) return *l;
  std::string names;
  for (auto& l : layers_) names += (names.empty() ? "" : ", ") + l->name();
  throw ConfigError("no layer named '" + name + "'; layers are: " + names);
}

std::vector<InputLayer*> Network::inputs() {
  std::vector<InputLayer*> out;
  for (auto& l : layers_)
    if (auto* in = dynamic_cast<InputLayer*>(l.get())) out.push_back(in);
  return out;
}

std::vector<Layer*> Network::outputs() {
  std::vector<Layer*> out;
  for (auto& l : layers_)
    if (l->kind() == LayerKind::Output) out.push_back(l.get());
  return out;
}

std::vector<Parameter*> Network::parameters() {
  std::vector<Parameter*> out;
  for (auto& l : layers_)
    for (Parameter* p : l->parameters()) out.push_back(p);
  return out;
}

size_t Network::parameter_count() const {
  size_t n = 0;
  for (const auto& l : layers_)
    for (Parameter* p : const_cast<Layer&>(*l).parameters()) n += p->logical_size();
  return n;
}

}  // namespace nn
