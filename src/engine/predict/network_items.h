// The items a prediction or serving job names a layer's units with. A network trained on named
// data carries its items (LayerSpec::features); an index file given beside it must list the same
// items at the same indices, or it is refused with the first difference before anything is
// written: an index regenerated in another order, or yesterday's index beside today's network,
// would otherwise give wrong answers that no one sees. With `remap` a reordered index is matched
// to the network by name instead. A network without items (DSSTNE's, or trained on unnamed data)
// uses the index file as it always did.
#pragma once

#include <string>

#include "config/network_spec.h"
#include "data/dataset.h"
#include "data/text_examples.h"

namespace nn {

struct ItemSource {
  std::string index_path;  // the index file given ("" = none)
  std::string option;      // how the user gave it, for messages ("-i", "-o", "--input-index")
  bool remap = false;      // match a differing index by name instead of refusing it
  std::string remap_option = "--remap-index";  // the option that asks for remapping
};

struct LayerItems {
  FeatureIndex index;  // name -> unit of the layer
  bool present = false;
  std::string note;  // for the log: where the names came from ("" = nothing to say)
};

// The index naming `layer`'s units: the network's own items when it has them (checked against
// the index file when one is given), else the index file, else none. DataError naming the first
// difference when the file does not match and `remap` is off.
LayerItems layer_items(const LayerSpec& layer, const ItemSource& source);

// The first difference between a layer's own items and the index file at `index_path`, given
// with `option` ("-i"); "" when the file lists the same items at the same indices.
std::string index_difference(const std::vector<std::string>& own, const std::string& index_path,
                             const std::string& option);

// `set`'s features re-indexed into `names`' order by name (the dataset's own names say what each
// index is): entries whose item the names lack are dropped. Returns how many were dropped.
// DataError when the dataset has no names. For in-memory sparse datasets.
uint64_t remap_dataset_items(ExampleSet& set, const FeatureNames& names, uint64_t width,
                             const std::string& file);

}  // namespace nn
