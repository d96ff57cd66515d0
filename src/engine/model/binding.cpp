// Dataset-to-layer binding and "auto" size resolution.
#include "model/binding.h"

#include "core/error.h"
#include "core/nearest_name.h"

namespace nn {
namespace {

const ExampleSet* find_set(const std::vector<ExampleSet>& sets, const std::string& name) {
  for (const auto& s : sets)
    if (s.name == name) return &s;
  return nullptr;
}

std::string available(const std::vector<ExampleSet>& sets) {
  std::string out;
  for (const auto& s : sets) out += (out.empty() ? "'" : ", '") + s.name + "'";
  return out.empty() ? "none" : out;
}

// " (did you mean 'x'?)" when a loaded dataset's name is near the one the layer asks for.
std::string suggest_set(const std::vector<ExampleSet>& sets, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& s : sets) names.push_back(s.name);
  return did_you_mean(name, names);
}

std::string layer_where(const NetworkSpec& spec, const LayerSpec& l) {
  return (spec.source.empty() ? std::string("network") : spec.source) + ": layer '" + l.name + "'";
}

}  // namespace

std::map<std::string, bool> BoundData::sparse_inputs() const {
  std::map<std::string, bool> out;
  for (const auto& in : inputs) out[in.layer] = in.dataset->is_sparse();
  return out;
}

void resolve_auto_sizes(NetworkSpec& spec, const std::vector<ExampleSet>& sets) {
  for (auto& l : spec.layers) {
    if (!l.n_auto) continue;
    const ExampleSet* ds = find_set(sets, l.dataset);
    if (!ds)
      throw ConfigError(layer_where(spec, l) + ": \"N\": \"auto\" needs dataset '" + l.dataset +
                        "', which was not loaded; available: " + available(sets) +
                        suggest_set(sets, l.dataset));
    l.n = {ds->width, ds->height, ds->length, 1};
    l.dimensions = ds->dimensions;
    l.n_auto = false;
  }
}

void attach_feature_names(NetworkSpec& spec, const std::vector<ExampleSet>& sets) {
  for (auto& l : spec.layers) {
    if (l.features || (l.kind != LayerKind::Input && l.kind != LayerKind::Output)) continue;
    const ExampleSet* ds = find_set(sets, l.dataset);
    if (ds && ds->feature_names && ds->features() <= l.units()) l.features = ds->feature_names;
  }
}

BoundData bind_datasets(const NetworkSpec& spec, const std::vector<ExampleSet>& sets,
                        bool need_outputs, const std::string& files) {
  BoundData bound;
  auto bind = [&](const LayerSpec& l, std::vector<LayerData>& into) {
    if (l.dataset.empty()) throw ConfigError(layer_where(spec, l) + ": has no DataSet to bind");
    const ExampleSet* ds = find_set(sets, l.dataset);
    if (!ds)
      throw ConfigError(layer_where(spec, l) + ": dataset '" + l.dataset + "' not found in " +
                        files + "; available: " + available(sets) + suggest_set(sets, l.dataset));
    const uint64_t units = l.units();
    if (ds->features() > units || (!ds->is_sparse() && ds->features() != units))
      throw ConfigError(layer_where(spec, l) + ": dataset '" + ds->name + "' (" + files + ") has " +
                        std::to_string(ds->features()) +
                        " features per example but the layer has " + std::to_string(units) +
                        " units");
    if (l.features && ds->feature_names && l.features != ds->feature_names) {
      const std::string difference = first_name_difference(
          *l.features, *ds->feature_names, "dataset '" + ds->name + "' (" + files + ")");
      if (!difference.empty())
        throw ConfigError(layer_where(spec, l) +
                          ": the dataset's features are not the network's: " + difference +
                          " (the data were indexed with another feature index; index them with "
                          "the network's, or match them by name: nn-predict --remap-index)");
    }
    if (bound.examples == 0) {
      bound.examples = ds->examples;
    } else if (ds->examples != bound.examples) {
      throw ConfigError(layer_where(spec, l) + ": dataset '" + ds->name + "' (" + files + ") has " +
                        std::to_string(ds->examples) + " examples; other bound datasets have " +
                        std::to_string(bound.examples));
    }
    into.push_back({l.name, ds, l.kind == LayerKind::Input ? l.normalize : RowNormalization::None});
  };
  for (const auto& l : spec.layers)
    if (l.kind == LayerKind::Input) bind(l, bound.inputs);
  if (need_outputs)
    for (const auto& l : spec.layers)
      if (l.kind == LayerKind::Output) bind(l, bound.outputs);
  if (bound.examples == 0) throw ConfigError(files + ": the bound datasets have no examples");
  return bound;
}

}  // namespace nn
