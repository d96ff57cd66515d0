// The public Model: loading, building, saving, layer and weight inspection.
#include "nn/model.h"

#include <algorithm>
#include <cctype>

#include "api/model_impl.h"
#include "backend/backend_choice.h"
#include "backend/cpu/cpu_backend.h"
#include "config/parse.h"
#include "core/error.h"
#include "core/nearest_name.h"
#include "distributed/device_placement.h"
#include "model/binding.h"

namespace nn::api {
namespace {

std::vector<uint32_t> layer_shape(const LayerSpec& l) {
  const int dims = std::clamp(l.dimensions, 1, 4);
  return std::vector<uint32_t>(l.n.begin(), l.n.begin() + dims);
}

// "Hidden<-Input:weights" -> "Input" ("" when the name has another form).
std::string weight_source(const std::string& name) {
  const size_t arrow = name.find("<-"), colon = name.rfind(':');
  if (arrow == std::string::npos || colon == std::string::npos || colon < arrow) return "";
  return name.substr(arrow + 2, colon - arrow - 2);
}

// The backend of `options`, in batch-invariant mode when they ask for it (CPU only: the CUDA
// backend's cuBLAS makes no such promise, docs/serving.md).
std::unique_ptr<Backend> options_backend(const NetworkSpec& spec, const ModelOptions& options) {
  auto backend =
      make_backend_for(spec, options.backend, options.threads, resolve_device(options.device));
  if (options.batch_invariant)
    if (auto* cpu = dynamic_cast<CpuBackend*>(backend.get())) cpu->set_batch_invariant(true);
  if (resolve_precision(options.precision, spec) == Precision::BF16)
    backend->set_precision(Precision::BF16);  // refuses where BF16 cannot run
  return backend;
}

}  // namespace

std::map<std::string, bool> sparse_flags(const NetworkSpec& spec) {
  std::map<std::string, bool> out;
  for (const auto& l : spec.layers)
    if (l.kind == LayerKind::Input) out[l.name] = l.sparse;
  return out;
}

std::shared_ptr<Model> Model::Impl::create(std::unique_ptr<Backend> backend, NetworkSpec spec,
                                           std::map<std::string, bool> sparse_inputs,
                                           const NetworkFile* arrays, uint64_t seed,
                                           const NetworkParallel& parallel) {
  auto impl = std::make_unique<Impl>();
  impl->backend = std::move(backend);
  impl->sparse_inputs = std::move(sparse_inputs);
  impl->name = spec.name;
  impl->net =
      std::make_unique<Network>(*impl->backend, std::move(spec), impl->sparse_inputs, parallel);
  Network& net = *impl->net;
  if (arrays)
    net.load_arrays(*arrays);
  else
    net.initialize(seed);
  for (const auto& l : net.spec().layers) {
    LayerInfo info;
    info.name = l.name;
    info.kind = to_string(l.kind);
    info.type = to_string(l.type);
    info.dataset = l.dataset;
    info.shape = layer_shape(l);
    info.units = l.units();
    auto it = impl->sparse_inputs.find(l.name);
    info.sparse_input = l.kind == LayerKind::Input && it != impl->sparse_inputs.end() && it->second;
    impl->layers.push_back(info);
  }
  for (Layer* layer : net.order()) {
    for (Parameter* p : layer->parameters()) {
      WeightInfo w;
      w.name = p->name;
      w.layer = layer->name();
      w.size = p->logical_size();  // padded rows are never shown
      const std::string src = weight_source(p->name);
      const Layer* from = src.empty() ? nullptr : net.find(src);
      const bool matrix =
          p->name.size() > 8 && p->name.compare(p->name.size() - 8, 8, ":weights") == 0;
      if (matrix && from && size_t(from->units()) * layer->units() == w.size)
        w.shape = {from->units(), layer->units()};
      else
        w.shape = {w.size};
      impl->weights.push_back(w);
      impl->parameters.push_back(p);
    }
  }
  return std::shared_ptr<Model>(new Model(std::move(impl)));
}

std::shared_ptr<Model> Model::Impl::from_file(const NetworkFile& file, const ModelOptions& options,
                                              std::map<std::string, bool> sparse_inputs,
                                              const NetworkParallel& parallel) {
  if (sparse_inputs.empty()) sparse_inputs = sparse_flags(file.spec);
  return create(options_backend(file.spec, options), file.spec, std::move(sparse_inputs), &file, 0,
                parallel);
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

std::shared_ptr<Model> Model::load(const std::string& path, const ModelOptions& options) {
  NetworkFile file = read_network_file(path);
  if (file.spec.source.empty()) file.spec.source = path;
  return Impl::from_file(file, options);
}

std::shared_ptr<Model> Model::from_json(const std::string& json,
                                        const std::map<std::string, DataShape>& datasets,
                                        uint64_t seed, const ModelOptions& options) {
  const size_t first = json.find_first_not_of(" \t\r\n");
  NetworkSpec spec = first != std::string::npos && json[first] == '{'
                         ? parse_network_json(json, "network JSON")
                         : load_network_json(json);
  // "auto" sizes come from the datasets' shapes: shape-only stand-ins carry them.
  std::vector<ExampleSet> shapes;
  for (const auto& [name, shape] : datasets) {
    ExampleSet ds;
    ds.name = name;
    ds.width = shape.width;
    ds.height = shape.height;
    ds.length = shape.length;
    ds.dimensions = shape.length > 1 ? 3 : shape.height > 1 ? 2 : 1;
    if (shape.sparse) ds.attributes |= attr::Sparse;
    shapes.push_back(std::move(ds));
  }
  resolve_auto_sizes(spec, shapes);
  std::map<std::string, bool> sparse = sparse_flags(spec);
  for (auto& [layer, is_sparse] : sparse) {
    for (const auto& l : spec.layers) {
      if (l.name != layer) continue;
      auto it = datasets.find(l.dataset);
      if (it != datasets.end()) is_sparse = it->second.sparse;
    }
  }
  auto backend = options_backend(spec, options);
  return Impl::create(std::move(backend), std::move(spec), std::move(sparse), nullptr, seed);
}

void Model::save(const std::string& path) const {
  write_network_file(path, impl_->net->to_file_view());
}

const std::string& Model::name() const {
  return impl_->name;
}
std::string Model::backend_name() const {
  return impl_->backend->name();
}
std::vector<LayerInfo> Model::layers() const {
  return impl_->layers;
}

const LayerInfo& Model::layer(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& l : impl_->layers) {
    if (l.name == name) return l;
    names.push_back(l.name);
  }
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw ConfigError("no layer named '" + name + "'" + did_you_mean(name, names) +
                    "; layers are: " + list);
}

std::vector<std::string> Model::input_layers() const {
  std::vector<std::string> out;
  for (const auto& l : impl_->layers)
    if (l.kind == "Input") out.push_back(l.name);
  return out;
}

std::shared_ptr<const std::vector<std::string>> Model::items(const std::string& layer) const {
  this->layer(layer);  // ConfigError naming the layers
  const LayerSpec* spec = impl_->net->spec().find_layer(layer);
  return spec ? spec->features : nullptr;
}

std::vector<std::string> Model::output_layers() const {
  std::vector<std::string> out;
  for (const auto& l : impl_->layers)
    if (l.kind == "Output") out.push_back(l.name);
  return out;
}

std::vector<WeightInfo> Model::weights() const {
  return impl_->weights;
}

const WeightInfo& Model::weight(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& w : impl_->weights) {
    if (w.name == name) return w;
    names.push_back(w.name);
  }
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw ConfigError("no weight named '" + name + "'" + did_you_mean(name, names) +
                    "; weights are: " + list);
}

std::vector<float> Model::get_weights(const std::string& name) const {
  const WeightInfo& w = weight(name);
  const size_t i = size_t(&w - impl_->weights.data());
  const Parameter& p = *impl_->parameters[i];
  return p.logical_values(p.value);
}

void Model::set_weights(const std::string& name, const float* values, size_t count) {
  const WeightInfo& w = weight(name);
  if (count != w.size)
    throw ConfigError("weight '" + name + "' has " + std::to_string(w.size) + " values; got " +
                      std::to_string(count));
  const size_t i = size_t(&w - impl_->weights.data());
  Parameter& p = *impl_->parameters[i];
  p.upload_logical(p.value, values, count);
}

}  // namespace nn::api
