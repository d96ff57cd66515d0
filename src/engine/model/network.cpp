// Network construction, initialisation, forward/backward ordering and file conversion.
#include "model/network.h"

#include <cmath>
#include <functional>
#include <set>

#include "core/error.h"
#include "core/random.h"

namespace nn {
namespace {

std::string where(const NetworkSpec& spec, const LayerSpec& l) {
  return (spec.source.empty() ? std::string("network") : spec.source) + ": layer '" + l.name +
         "'";
}

// Host-side initial weights for one connection (dsstne-reference.md §3.5).
std::vector<float> initial_weights(const LayerSpec& l, size_t n_in, size_t n_out, Rng& rng) {
  std::vector<float> w(n_in * n_out);
  const double s = l.weight_init_scale;
  auto uniform = [&](double lo, double hi) {
    for (auto& v : w) v = static_cast<float>(lo + (hi - lo) * rng.uniform());
  };
  switch (l.weight_init) {
    case WeightInit::Xavier: {
      const double a = s * std::sqrt(6.0 / double(n_in + n_out));
      uniform(-a / 2, a / 2);
      break;
    }
    case WeightInit::CaffeXavier: {
      const double a = s * std::sqrt(3.0 / double(n_out));
      uniform(-a, a);
      break;
    }
    case WeightInit::Uniform: uniform(-s, s); break;
    case WeightInit::UnitBall: uniform(0, s); break;
    case WeightInit::Gaussian:
      for (auto& v : w) v = static_cast<float>(s * rng.normal());
      break;
    case WeightInit::SELU:
      for (auto& v : w) v = static_cast<float>(rng.normal() / std::sqrt(double(n_in)));
      break;
    case WeightInit::Constant:
      for (auto& v : w) v = static_cast<float>(s);
      break;
  }
  return w;
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
    std::unique_ptr<Layer> layer;
    if (l.kind == LayerKind::Input) {
      auto it = sparse_inputs.find(l.name);
      layer = std::make_unique<InputLayer>(l, i, it != sparse_inputs.end() && it->second);
    } else if (l.type == LayerType::FullyConnected) {
      layer = std::make_unique<FullyConnectedLayer>(l, i);
    } else {
      throw ConfigError(where(spec_, l) + ": Type " + to_string(l.type) +
                        " is not supported yet (fully connected layers only)");
    }
    if (l.kind == LayerKind::Target)
      throw ConfigError(where(spec_, l) + ": Kind Target is not supported");
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
      if (auto* fc = dynamic_cast<FullyConnectedLayer*>(layer.get())) fc->connect(backend_, it->second);
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
  if (outputs().empty()) throw ConfigError(spec_.source + ": the network has no Output layer");
  if (inputs().empty()) throw ConfigError(spec_.source + ": the network has no Input layer");
}

void Network::initialize(uint64_t seed) {
  Rng rng(mix64(seed ^ 0x5EEDu));
  for (auto& layer : layers_) {
    auto* fc = dynamic_cast<FullyConnectedLayer*>(layer.get());
    if (!fc) continue;
    for (auto& c : fc->connections()) {
      auto w = initial_weights(fc->spec(), c->source->units(), fc->units(), rng);
      c->weights.value.upload(w);
      std::vector<float> b(fc->units(), fc->spec().bias_init);
      c->bias.value.upload(b);
    }
  }
}

void Network::load_arrays(const NetworkFile& file) {
  size_t k = 0;
  for (auto& layer : layers_) {
    auto* fc = dynamic_cast<FullyConnectedLayer*>(layer.get());
    if (!fc) continue;
    for (auto& c : fc->connections()) {
      if (k >= file.weights.size())
        throw DataError("network file has " + std::to_string(file.weights.size()) +
                        " weights; layer '" + fc->name() + "' needs more");
      const WeightArrays& wa = file.weights[k++];
      if (wa.input_layer != c->source->name() || wa.output_layer != fc->name())
        throw DataError("network file weight " + std::to_string(k - 1) + " connects '" +
                        wa.input_layer + "' -> '" + wa.output_layer + "', expected '" +
                        c->source->name() + "' -> '" + fc->name() + "'");
      if (wa.weights.size() != c->weights.size() || wa.bias.size() != c->bias.size())
        throw DataError("network file weight '" + wa.input_layer + "' -> '" + wa.output_layer +
                        "': " + std::to_string(wa.weights.size()) + " weights and " +
                        std::to_string(wa.bias.size()) + " biases, expected " +
                        std::to_string(c->weights.size()) + " and " +
                        std::to_string(c->bias.size()));
      c->weights.value.upload(wa.weights);
      c->bias.value.upload(wa.bias);
      c->weights.locked = wa.locked;
      c->bias.locked = wa.locked;
      auto load_state = [&](Parameter& p, const std::vector<std::vector<float>>& st) {
        p.state.clear();
        for (const auto& s : st) {
          if (s.size() != p.size())
            throw DataError("network file: optimizer state of '" + p.name + "' has " +
                            std::to_string(s.size()) + " values, expected " +
                            std::to_string(p.size()));
          p.state.emplace_back(backend_, s.size());
          p.state.back().upload(s);
        }
      };
      load_state(c->weights, wa.weight_state);
      load_state(c->bias, wa.bias_state);
    }
  }
}

NetworkFile Network::to_file() const {
  NetworkFile f;
  f.spec = spec_;
  for (const auto& layer : layers_) {
    auto* fc = dynamic_cast<const FullyConnectedLayer*>(layer.get());
    if (!fc) continue;
    for (const auto& c : fc->connections()) {
      WeightArrays wa;
      wa.input_layer = c->source->name();
      wa.output_layer = fc->name();
      wa.width = fc->units();
      wa.height = c->source->units();
      wa.norm = fc->spec().weight_norm;
      wa.locked = c->weights.locked;
      wa.weights = c->weights.value.to_host();
      wa.bias = c->bias.value.to_host();
      for (const auto& s : c->weights.state) wa.weight_state.push_back(s.to_host());
      for (const auto& s : c->bias.state) wa.bias_state.push_back(s.to_host());
      f.weights.push_back(std::move(wa));
    }
  }
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
