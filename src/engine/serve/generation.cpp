// Loading one generation of the served network (serve/generation.h).
#include "serve/generation.h"

#include <sys/stat.h>

#include "core/error.h"
#include "data/text_examples.h"
#include "predict/network_items.h"

namespace nn::serve {
namespace {

// The index file's names for a layer of `units` units.
UnitNames read_names(const std::string& path, uint64_t units, const std::string& layer) {
  UnitNames names;
  names.name.assign(units, "");
  const FeatureIndex index = load_index(path);
  for (uint64_t i = 0; i < index.size(); ++i) {
    const std::string label = index.label(i);
    if (label.empty()) continue;
    if (i >= units)
      throw ArgumentError(path + ": names unit " + std::to_string(i) + " ('" + label +
                          "'), but layer '" + layer + "' has " + std::to_string(units) +
                          " units: is it the index of this network?");
    names.name[i] = label;
    names.column.emplace(label, uint32_t(i));
  }
  return names;
}

// A layer's unit names: the network's own items when it carries them (an index file given
// beside them must list the same items, or be matched by name with remap), else the index file.
UnitNames unit_names(const api::Model& model, const std::string& layer, uint64_t units,
                     const std::string& index_path, const std::string& option, bool remap,
                     const std::string& network) {
  const std::shared_ptr<const std::vector<std::string>> own = model.items(layer);
  if (!own) {
    if (index_path.empty())
      throw ArgumentError(network + " does not carry its items (layer '" + layer +
                          "'): give the item names with " + option +
                          " (the index nn-generate "
                          "wrote for the data it was trained on)");
    return read_names(index_path, units, layer);
  }
  if (!index_path.empty() && !remap) {
    const std::string difference = index_difference(*own, index_path, option);
    if (!difference.empty())
      throw DataError(option + " " + index_path + " does not match the items of layer '" + layer +
                      "' in " + network + ": " + difference + ". Leave " + option +
                      " out to serve the network's own items (they are swapped in with each new "
                      "network), or give --remap-index to match the index by name");
  }
  UnitNames names;
  names.name.assign(units, "");
  for (uint64_t i = 0; i < own->size() && i < units; ++i) {
    if ((*own)[i].empty()) continue;
    names.name[i] = (*own)[i];
    names.column.emplace((*own)[i], uint32_t(i));
  }
  return names;
}

}  // namespace

FileIdentity identify(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  FileIdentity id;
  id.device = uint64_t(st.st_dev);
  id.inode = uint64_t(st.st_ino);
  id.size = uint64_t(st.st_size);
  id.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return id;
}

std::shared_ptr<Generation> load_generation(const api::ServeOptions& options, int workers,
                                            uint64_t version) {
  auto gen = std::make_shared<Generation>();
  gen->version = version;
  // The identity is taken before reading: a file replaced during the read is read again later.
  gen->file = identify(options.network);
  api::ModelOptions mo;
  mo.backend = options.backend;
  mo.threads = options.threads;
  mo.device = options.device;
  mo.batch_invariant = true;  // a batched request must get the answer it would get alone
  std::shared_ptr<api::Model> model = api::Model::load(options.network, mo);
  const std::vector<std::string> inputs = model->input_layers();
  const std::vector<std::string> outputs = model->output_layers();
  if (inputs.size() != 1)
    throw ArgumentError(options.network + ": has " + std::to_string(inputs.size()) +
                        " input layers; nn-serve serves networks with one input layer");
  if (outputs.empty()) throw ArgumentError(options.network + ": has no output layer");
  gen->input_layer = inputs.front();
  gen->output_layer = outputs.front();
  gen->input_units = model->layer(gen->input_layer).units;
  gen->output_units = model->layer(gen->output_layer).units;
  if (gen->output_units > UINT32_MAX || gen->input_units > UINT32_MAX)
    throw ArgumentError(options.network + ": layers wider than 2^32 - 1 units are not served");
  gen->inputs = unit_names(*model, gen->input_layer, gen->input_units, options.input_index, "-i",
                           options.remap_index, options.network);
  gen->outputs = unit_names(*model, gen->output_layer, gen->output_units, options.output_index,
                            "-o", options.remap_index, options.network);
  for (uint64_t u = 0; u < gen->output_units; ++u)
    if (gen->outputs.name[u].empty()) gen->unnamed_outputs.push_back(uint32_t(u));
  if (gen->unnamed_outputs.size() == gen->output_units)
    throw ArgumentError((options.output_index.empty() ? options.network : options.output_index) +
                        ": names none of layer '" + gen->output_layer + "''s " +
                        std::to_string(gen->output_units) + " units");
  gen->model = model;
  for (int w = 0; w < workers; ++w)
    gen->evaluators.push_back(std::make_unique<api::Evaluator>(gen->model, options.max_batch));
  return gen;
}

}  // namespace nn::serve
