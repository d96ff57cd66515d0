// Warm starts matched by item name (see warm_start.h).
#include "model/warm_start.h"

#include <map>

#include "core/error.h"
#include "core/feature_names.h"

namespace nn {
namespace {

// How one layer's units map from the old network to the new: for each new unit, the old unit it
// takes its values from, or -1 (a new item, or padding).
struct UnitMap {
  std::vector<int64_t> from;
  bool identity = true;
  bool is_new = false;  // a layer the old network does not have
};

std::string shape_of(const LayerSpec& l) {
  std::string s;
  for (int d = 0; d < 4; ++d)
    if (d == 0 || l.n[d] > 1) s += (s.empty() ? "" : " x ") + std::to_string(l.n[d]);
  return s;
}

std::string count_text(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

class WarmStart {
 public:
  WarmStart(const NetworkFile& fresh, const NetworkFile& old, const std::string& old_path,
            bool carry_state)
      : fresh_(fresh), old_(old), path_(old_path), carry_state_(carry_state) {}

  WarmStartResult run() {
    WarmStartResult r;
    r.arrays = fresh_;
    for (const LayerSpec& l : old_.spec.layers) old_layers_[l.name] = &l;
    for (const LayerSpec& l : fresh_.spec.layers) maps_[l.name] = map_layer(l, r.lines);
    for (WeightArrays& w : r.arrays.weights) carry_weight(w, r.lines);
    for (LayerArrays& a : r.arrays.layers) carry_layer_arrays(a);
    for (const LayerSpec& l : old_.spec.layers)
      if (!maps_.count(l.name))
        r.lines.push_back("layer '" + l.name + "' of " + path_ +
                          " is not in the new network: dropped");
    return r;
  }

 private:
  [[noreturn]] void fail(const std::string& layer, const std::string& problem) const {
    throw DataError("--warm-start " + path_ + ": layer '" + layer + "': " + problem);
  }

  UnitMap map_layer(const LayerSpec& l, std::vector<std::string>& lines) {
    UnitMap m;
    const auto it = old_layers_.find(l.name);
    if (it == old_layers_.end()) {
      lines.push_back("layer '" + l.name + "': new (initialised as the network says)");
      m.identity = false;
      m.is_new = true;
      return m;
    }
    const LayerSpec& o = *it->second;
    const bool items = l.kind == LayerKind::Input || l.kind == LayerKind::Output;
    if (items && l.features && o.features) {
      std::vector<std::string> names(*l.features), old_names(*o.features);
      names.resize(l.units());
      m.from = match_names(old_names, names);
      m.identity = false;
      const NameMatchCounts c = count_matches(old_names, names, m.from);
      lines.push_back("layer '" + l.name + "': " + count_text(c.kept, "item", "items") + " kept, " +
                      std::to_string(c.added) + " added, " + std::to_string(c.dropped) +
                      " dropped (" + std::to_string(o.units()) + " -> " +
                      std::to_string(l.units()) + " units)");
      return m;
    }
    if (l.n != o.n) {
      if (items)
        fail(l.name, std::string("has ") + shape_of(o) + " units in the old network and " +
                         shape_of(l) + " in the new, and " +
                         (o.features ? "the new data do not" : "the old network does not") +
                         " name the items, so they cannot be matched (datasets written by "
                         "nn-generate name them; a network trained on them carries the names)");
      fail(l.name, "is " + shape_of(o) + " in the old network and " + shape_of(l) +
                       " in the new; only the item layers (Input and Output) may change size");
    }
    if (items)
      lines.push_back("layer '" + l.name + "': " + std::to_string(l.units()) +
                      " units copied by position (" +
                      (l.features || o.features ? "only one side names its items"
                                                : "neither network names its items") +
                      ")");
    m.identity = true;
    return m;
  }

  const WeightArrays* old_weight(const WeightArrays& w) const {
    for (const WeightArrays& o : old_.weights)
      if (o.input_layer == w.input_layer && o.output_layer == w.output_layer) return &o;
    return nullptr;
  }

  // The old unit for new unit i of `layer`, or -1.
  int64_t source(const UnitMap& m, uint64_t i) const {
    if (m.identity) return int64_t(i);
    return i < m.from.size() ? m.from[i] : -1;
  }

  void carry_weight(WeightArrays& w, std::vector<std::string>& lines) const {
    const WeightArrays* o = old_weight(w);
    const std::string name = w.input_layer + " -> " + w.output_layer;
    if (!o) {
      lines.push_back("weights " + name + ": new (initialised as the network says)");
      return;
    }
    const UnitMap& rows = maps_.at(w.input_layer);
    const UnitMap& cols = maps_.at(w.output_layer);
    if (rows.is_new || cols.is_new) return;  // a new layer's weights start as initialised
    if (w.shared != o->shared)
      fail(w.output_layer, "the weights from '" + w.input_layer + "' are " +
                               (o->shared ? "shared" : "its own") + " in the old network and " +
                               (w.shared ? "shared" : "its own") + " in the new");
    // Biases: one per output unit (and their optimizer state, when carried).
    const auto carry_bias = [&](std::vector<float>& dst, const std::vector<float>& src) {
      for (uint64_t c = 0; c < dst.size(); ++c) {
        const int64_t from = source(cols, c);
        if (from >= 0 && uint64_t(from) < src.size()) dst[c] = src[size_t(from)];
      }
    };
    if (!w.bias.empty() && !o->bias.empty()) carry_bias(w.bias, o->bias);
    if (carry_state_ && !w.bias.empty())
      w.bias_state = carried_states(o->bias_state, w.bias.size(), carry_bias);
    if (w.shared || w.weights.empty() || o->weights.empty()) return;
    const bool fully_connected = w.length == 1 && w.depth == 1 && w.breadth == 1 &&
                                 o->length == 1 && o->depth == 1 && o->breadth == 1;
    const bool same_units = rows.identity && cols.identity;
    if (same_units &&
        (w.weights.size() != o->weights.size() || w.width != o->width || w.height != o->height))
      fail(w.output_layer, "the weights from '" + w.input_layer + "' are " +
                               std::to_string(o->height) + " x " + std::to_string(o->width) +
                               " in the old network and " + std::to_string(w.height) + " x " +
                               std::to_string(w.width) + " in the new");
    if (!same_units && !fully_connected)
      fail(w.output_layer, "its items changed but its weights from '" + w.input_layer +
                               "' are not fully connected; only fully connected weights are "
                               "matched by item");
    // [input][output], row-major: row r (input unit), column c (output unit).
    const auto carry_matrix = [&](std::vector<float>& dst, const std::vector<float>& src) {
      if (same_units) {
        dst = src;
        return;
      }
      for (uint64_t r = 0; r < w.height; ++r) {
        const int64_t from_r = source(rows, r);
        if (from_r < 0 || uint64_t(from_r) >= o->height) continue;
        for (uint64_t c = 0; c < w.width; ++c) {
          const int64_t from_c = source(cols, c);
          if (from_c < 0 || uint64_t(from_c) >= o->width) continue;
          dst[r * w.width + c] = src[uint64_t(from_r) * o->width + uint64_t(from_c)];
        }
      }
    };
    carry_matrix(w.weights, o->weights);
    if (carry_state_)
      w.weight_state = carried_states(o->weight_state, w.weights.size(), carry_matrix);
  }

  // The old optimizer state arrays mapped like the values they follow; new entries start at 0
  // (where the optimizer starts every entry). Empty when the old file has none.
  template <typename Carry>
  static std::vector<std::vector<float>> carried_states(const std::vector<std::vector<float>>& old,
                                                        size_t size, const Carry& carry) {
    std::vector<std::vector<float>> states;
    for (const std::vector<float>& s : old) {
      states.emplace_back(size, 0.0f);
      carry(states.back(), s);
    }
    return states;
  }

  void carry_layer_arrays(LayerArrays& a) const {
    for (const LayerArrays& o : old_.layers) {
      if (o.layer != a.layer) continue;
      if (o.bn_scale.size() != a.bn_scale.size())
        fail(a.layer, "has " + std::to_string(o.bn_scale.size()) +
                          " batch-normalisation channels in the old network and " +
                          std::to_string(a.bn_scale.size()) + " in the new");
      a.bn_scale = o.bn_scale;
      a.bn_bias = o.bn_bias;
      a.bn_running_mean = o.bn_running_mean;
      a.bn_running_variance = o.bn_running_variance;
    }
  }

  const NetworkFile& fresh_;
  const NetworkFile& old_;
  const std::string& path_;
  bool carry_state_;
  std::map<std::string, const LayerSpec*> old_layers_;
  std::map<std::string, UnitMap> maps_;
};

}  // namespace

WarmStartResult warm_start(const NetworkFile& fresh, const NetworkFile& old,
                           const std::string& old_path, bool carry_optimizer_state) {
  return WarmStart(fresh, old, old_path, carry_optimizer_state).run();
}

}  // namespace nn
