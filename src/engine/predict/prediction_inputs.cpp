// A prediction job's network, examples and layers (see prediction_inputs.h).
#include "predict/prediction_inputs.h"

#include <cctype>
#include <cstdio>

#include "core/error.h"
#include "core/nearest_name.h"
#include "io/netcdf_dataset.h"
#include "predict/network_items.h"

namespace nn {
namespace {

// "A, B, C" plus " (did you mean 'B'?)" when `wanted` is near one of the names.
std::string layer_names(const NetworkSpec& spec, const std::string& wanted = "") {
  std::string names;
  std::vector<std::string> list;
  for (const auto& l : spec.layers) {
    names += (names.empty() ? "" : ", ") + l.name;
    list.push_back(l.name);
  }
  return names + (wanted.empty() ? std::string() : did_you_mean(wanted, list));
}

// True when the file's first non-blank byte opens a JSON object.
bool starts_like_json(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  int c = 0;
  while ((c = std::fgetc(f)) != EOF && std::isspace(c)) {
  }
  std::fclose(f);
  return c == '{';
}

// Inputs from text examples (converted in memory with the input feature index).
ExampleSet read_text_input(const ExampleSource& source, const NetworkSpec& spec,
                           const std::string& network, FeatureIndex& samples, const LogSink& log) {
  std::vector<const LayerSpec*> ins;
  for (const auto& l : spec.layers)
    if (l.kind == LayerKind::Input) ins.push_back(&l);
  if (ins.size() != 1)
    throw ConfigError(network + ": text input needs a network with exactly one input layer");
  // The network's own items when it has them (an index given beside them must match).
  LayerItems items = layer_items(*ins[0], ItemSource{source.input_index, "-i", source.remap});
  if (!items.present)
    throw ConfigError("text input " + source.text +
                      " needs the input feature index (-i): the network " + network +
                      " does not carry its items");
  if (!items.note.empty()) log(items.note);
  FeatureIndex& features = items.index;
  TextExamplesOptions opt;
  opt.mode = source.analog ? ExampleMode::Analog : ExampleMode::Indicator;
  opt.allow_new_features = false;
  opt.width_align = 1;
  opt.min_width = static_cast<uint32_t>(ins[0]->units());
  TextExamplesStats stats;
  const std::string name =
      source.dataset_base.empty() ? ins[0]->dataset : source.dataset_base + "_input";
  if (name != ins[0]->dataset)
    throw ConfigError("-d " + source.dataset_base + ": dataset '" + name +
                      "' does not match the network's input DataSet '" + ins[0]->dataset + "'");
  ExampleSet ds = read_text_examples({source.text}, name, features, samples, opt, &stats);
  log("read " + std::to_string(stats.samples) + " samples from " + source.text +
      (stats.dropped_features ? " (" + std::to_string(stats.dropped_features) +
                                    " features not in the index were ignored)"
                              : std::string()));
  return ds;
}

// --remap-index: datasets whose features are named in another order than the network's items are
// re-indexed into the network's order by name (bind_datasets refuses them otherwise).
void remap_named_datasets(std::vector<ExampleSet>& sets, const NetworkSpec& spec, bool streamed,
                          const LogSink& log) {
  for (const LayerSpec& l : spec.layers) {
    if (l.kind != LayerKind::Input || !l.features) continue;
    for (ExampleSet& s : sets) {
      if (s.name != l.dataset || !s.feature_names || s.feature_names == l.features) continue;
      if (first_name_difference(*l.features, *s.feature_names, "the dataset").empty()) continue;
      if (streamed)
        throw ConfigError("--remap-index: dataset '" + s.name +
                          "' is streamed (read a segment at a time) and cannot be re-indexed; "
                          "score it with --no-stream, or index it with the network's items");
      const uint64_t dropped = remap_dataset_items(s, l.features, l.units(), "--remap-index");
      log("dataset '" + s.name + "' re-indexed into the items of layer '" + l.name + "' by name" +
          (dropped ? " (" + std::to_string(dropped) +
                         " entries of items the network does not "
                         "know dropped)"
                   : std::string()));
    }
  }
}

}  // namespace

NetworkFile read_network_to_score(const std::string& path) {
  try {
    return read_network_file(path);
  } catch (const DataError&) {
    if (starts_like_json(path))
      throw DataError(path +
                      ": not a NetCDF file: this looks like a network JSON description (or a "
                      "command file), not a trained network file; -n (CDL Network with Command "
                      "Predict) expects the .nc that nn-train wrote from it");
    bool is_dataset = false;
    try {
      is_dataset = !read_datasets(path).empty();
    } catch (const Error&) {
      // Not a dataset either: the network reader's message says what is wrong.
    }
    if (is_dataset)
      throw DataError(path +
                      ": is a dataset file, not a network file (-n expects the .nc that "
                      "nn-train wrote)");
    throw;
  }
}

std::string PredictionInputs::sample_name(uint64_t e) const {
  return have_samples && e < samples.size() ? samples.label(e) : std::to_string(e);
}

PredictionInputs read_examples(const ExampleSource& source, const NetworkSpec& spec,
                               const std::string& network, const LogSink& log,
                               const std::vector<ExampleSet>* headers) {
  PredictionInputs in;
  if (!source.text.empty()) {
    in.sets.push_back(read_text_input(source, spec, network, in.samples, log));
    in.have_samples = true;
    in.files = source.text;
  } else {
    if (headers) in.sets = *headers;
    for (const auto& f : source.files) {
      if (!headers)
        for (auto& s : read_datasets(f)) in.sets.push_back(std::move(s));
      in.files += (in.files.empty() ? "" : ", ") + f;
    }
    if (source.remap) remap_named_datasets(in.sets, spec, headers != nullptr, log);
    if (!source.sample_index.empty()) {
      in.samples = load_index(source.sample_index);
      in.have_samples = true;
    }
  }
  in.bound = bind_datasets(spec, in.sets, /*need_outputs=*/false, in.files);
  // Rows of a dataset file are its samples in ascending index order, so a sample index names
  // them only when it lists exactly that many samples. An index reused from a larger file
  // (nn-generate -s loads and extends it) would put other samples' names on the results.
  if (source.text.empty() && in.have_samples && in.samples.size() != in.bound.examples)
    throw DataError("--sample-index " + source.sample_index + " lists " +
                    std::to_string(in.samples.size()) + " samples but " + in.files + " has " +
                    std::to_string(in.bound.examples) +
                    " examples: it is not this file's index, and its names would label the "
                    "wrong rows. Give the index written with this file (nn-generate -s with a "
                    "new file name), or score the examples as text with -r");
  return in;
}

std::string scored_layer(const std::string& requested, const NetworkSpec& spec,
                         const std::string& network) {
  if (!requested.empty()) {
    if (!spec.find_layer(requested))
      throw ConfigError(network + ": layer '" + requested +
                        "' (-l) not found; layers are: " + layer_names(spec, requested));
    return requested;
  }
  for (const auto& l : spec.layers)
    if (l.kind == LayerKind::Output) return l.name;
  throw ConfigError(network + ": network has no Output layer; name the layer to score with -l");
}

Layer& dump_source(Network& net, const NetworkSpec& spec, const std::string& name,
                   const std::string& network) {
  Layer* layer = net.find(name);
  if (!layer)
    throw ConfigError(network + ": --dump-layer '" + name +
                      "' not found; layers are: " + layer_names(spec, name));
  if (layer->has_sparse_output())
    throw ConfigError(network + ": --dump-layer '" + name +
                      "' is a sparse input layer; its activations are the input data");
  return *layer;
}

}  // namespace nn
