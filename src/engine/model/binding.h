// Binding datasets to a network's input and output layers by name (each layer's DataSet key),
// and resolving "N": "auto" sizes from the bound datasets (docs/file-formats.md, "Binding
// datasets to layers"; DSSTNE: NNNetwork::LoadDataSets).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/network_spec.h"
#include "data/dataset.h"

namespace nn {

struct LayerData {
  std::string layer;
  const ExampleSet* dataset = nullptr;
  // Input layers: the layer's "Normalize", applied to each batch as it is assembled
  // (model/batch_loader.h), before denoising.
  RowNormalization normalize = RowNormalization::None;
};

struct BoundData {
  std::vector<LayerData> inputs, outputs;
  uint64_t examples = 0;
  // Input layer name -> fed by a sparse dataset.
  std::map<std::string, bool> sparse_inputs() const;
};

// Replaces "auto" sizes with the named dataset's width/height/length. Throws ConfigError naming
// the layer and the datasets that are available.
void resolve_auto_sizes(NetworkSpec& spec, const std::vector<ExampleSet>& sets);

// Gives each Input and Output layer without names the feature names of the dataset bound to it,
// when that dataset has them (a network trained on it then knows its items).
void attach_feature_names(NetworkSpec& spec, const std::vector<ExampleSet>& sets);

// Finds each input (and, when `need_outputs`, output) layer's dataset. Where both the layer and
// its dataset name their features, the names must agree index for index: ConfigError naming the
// first difference otherwise (a dataset indexed in another order would be read silently wrong).
// Checks sizes and that all bound datasets have the same number of examples. `files` describes
// where the datasets came from, for messages.
BoundData bind_datasets(const NetworkSpec& spec, const std::vector<ExampleSet>& sets,
                        bool need_outputs, const std::string& files);

}  // namespace nn
