// Items of a network's layers against index files and datasets (see network_items.h).
#include "predict/network_items.h"

#include "core/error.h"

namespace nn {
namespace {

FeatureIndex index_of(const std::vector<std::string>& names, const std::string& where) {
  FeatureIndex index;
  for (uint64_t i = 0; i < names.size(); ++i)
    if (!names[i].empty()) index.insert(names[i], i, where);
  return index;
}

// The labels of an index file in index order ("" for a gap).
std::vector<std::string> index_labels(const std::string& path) {
  const FeatureIndex index = load_index(path);
  std::vector<std::string> labels(index.size());
  for (uint64_t i = 0; i < index.size(); ++i) labels[i] = index.label(i);
  return labels;
}

}  // namespace

std::string index_difference(const std::vector<std::string>& own, const std::string& index_path,
                             const std::string& option) {
  return first_name_difference(own, index_labels(index_path), option + " " + index_path);
}

LayerItems layer_items(const LayerSpec& layer, const ItemSource& source) {
  LayerItems items;
  if (!layer.features) {
    if (source.index_path.empty()) return items;
    items.index = load_index(source.index_path);
    items.present = true;
    return items;
  }
  const std::vector<std::string>& own = *layer.features;
  items.index = index_of(own, "the items of layer '" + layer.name + "'");
  items.present = true;
  uint64_t named = 0;
  for (const std::string& n : own) named += !n.empty();
  if (source.index_path.empty()) {
    items.note =
        "layer '" + layer.name + "': the network's own " + std::to_string(named) + " items";
    return items;
  }
  const std::string what = source.option + " " + source.index_path;
  const std::string difference = index_difference(own, source.index_path, source.option);
  if (difference.empty()) return items;
  if (!source.remap)
    throw DataError(what + " does not match the items of layer '" + layer.name +
                    "' that the network was trained with: " + difference + ". Leave " +
                    source.option + " out to use the network's own items, or give " +
                    source.remap_option + " to match the index to the network by name");
  const std::vector<int64_t> match = match_names(own, index_labels(source.index_path));
  uint64_t found = 0;
  for (int64_t m : match) found += m >= 0;
  items.note = "layer '" + layer.name + "': " + what +
               " remapped to the network's items by name (" + std::to_string(found) +
               " of its names found, " + std::to_string(named) + " items in the network)";
  return items;
}

uint64_t remap_dataset_items(ExampleSet& set, const FeatureNames& names, uint64_t width,
                             const std::string& file) {
  if (!set.feature_names)
    throw DataError(file + ": dataset '" + set.name +
                    "' does not name its features, so they cannot be matched by name");
  if (!set.is_sparse())
    throw DataError(file + ": dataset '" + set.name +
                    "' is dense; only sparse datasets are "
                    "matched by item name");
  const std::vector<int64_t> to = match_names(*names, *set.feature_names);
  uint64_t dropped = 0;
  std::vector<uint64_t> start(set.sparse_start.size()), end(set.sparse_end.size());
  std::vector<uint32_t> index;
  std::vector<float> value;
  index.reserve(set.sparse_index.size());
  if (!set.sparse_value.empty()) value.reserve(set.sparse_value.size());
  for (size_t r = 0; r < set.sparse_start.size(); ++r) {
    start[r] = index.size();
    for (uint64_t e = set.sparse_start[r]; e < set.sparse_end[r]; ++e) {
      const uint32_t f = set.sparse_index[e];
      const int64_t t = f < to.size() ? to[f] : -1;
      if (t < 0) {
        ++dropped;
        continue;
      }
      index.push_back(uint32_t(t));
      if (!set.sparse_value.empty()) value.push_back(set.sparse_value[e]);
    }
    end[r] = index.size();
  }
  set.sparse_index = std::move(index);
  set.sparse_value = std::move(value);
  set.sparse_start = std::move(start);
  set.sparse_end = std::move(end);
  set.width = uint32_t(width);
  set.height = set.length = 1;
  set.feature_names = names;
  return dropped;
}

}  // namespace nn
