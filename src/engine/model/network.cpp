// Network construction, initialisation, forward/backward ordering and file conversion.
#include "model/network.h"

#include <cmath>
#include <functional>
#include <set>

#include "core/error.h"
#include "core/random.h"
#include "layers/layer_registry.h"

namespace nn {
namespace {

std::string where(const NetworkSpec& spec, const LayerSpec& l) {
  return (spec.source.empty() ? std::string("network") : spec.source) + ": layer '" + l.name +
         "'";
}

}  // namespace

Network::Network(Backend& backend, NetworkSpec spec,
                 const std::map<std::string, bool>& sparse_inputs)
    : backend_(backend), spec_(std::move(spec)) {
  std::map<std::string, Layer*> by_name;
  for (uint32_t i = 0; i < spec_.layers.size(); ++i) {
    const LayerSpec& l = spec_.layers[i];
    if (l.n_auto)
      throw ConfigError(where(spec_, l) + ": size \"auto\" was not resolved against a dataset");
    if (l.units() == 0) throw ConfigError(where(spec_, l) + ": N must be positive");
    auto it = sparse_inputs.find(l.name);
    std::unique_ptr<Layer> layer =
        create_layer(l, i, it != sparse_inputs.end() && it->second, where(spec_, l));
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
    if (!l.shared_weights.empty())
      throw ConfigError(where(spec_, l) + ": SharedWeights is not supported yet");
  }
  // Topological order (depth-first over sources and skips), rejecting cycles.
  std::map<Layer*, int> state;  // 0 new, 1 visiting, 2 done
  std::function<void(Layer*)> visit = [&](Layer* x) {
    if (state[x] == 2) return;
    if (state[x] == 1)
      throw ConfigError(where(spec_, x->spec()) + ": the layer graph has a cycle");
    state[x] = 1;
    for (Layer* s : x->sources()) visit(s);
    for (Layer* s : x->skips()) visit(s);
    state[x] = 2;
    order_.push_back(x);
  };
  for (auto& layer : layers_) visit(layer.get());
  for (auto& layer : layers_) layer->build(backend_);
  if (outputs().empty()) throw ConfigError(spec_.source + ": the network has no Output layer");
  if (inputs().empty()) throw ConfigError(spec_.source + ": the network has no Input layer");
}

void Network::initialize(uint64_t seed) {
  Rng rng(mix64(seed ^ 0x5EEDu));
  for (auto& layer : layers_) layer->initialize(rng);
}

void Network::load_arrays(const NetworkFile& file) {
  size_t cursor = 0;
  for (auto& layer : layers_) layer->load(file, cursor);
  if (cursor != file.weights.size())
    throw DataError("network file has " + std::to_string(file.weights.size()) +
                    " weights; the network uses " + std::to_string(cursor));
}

NetworkFile Network::to_file() const {
  NetworkFile f;
  f.spec = spec_;
  for (const auto& layer : layers_) layer->save(f);
  return f;
}

void Network::set_max_batch(uint32_t rows) {
  if (rows == max_batch_) return;
  for (auto& layer : layers_) layer->allocate(backend_, rows);
  max_batch_ = rows;
}

void Network::forward(const LayerContext& ctx) {
  NN_CHECK(ctx.rows <= max_batch_, "batch larger than allocated");
  for (Layer* l : order_) l->forward(ctx);
}

void Network::backward(const LayerContext& ctx) {
  for (Layer* l : order_)
    if (l->kind() == LayerKind::Hidden && l->needs_delta())
      backend_.fill(l->delta(), size_t(ctx.rows) * l->units(), 0.0f);
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) (*it)->backward(ctx);
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
    for (Parameter* p : const_cast<Layer&>(*l).parameters()) n += p->size();
  return n;
}

}  // namespace nn
