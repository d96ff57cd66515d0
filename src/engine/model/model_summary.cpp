// Model summary: per-layer shapes, parameter counts and memory.
#include "model/model_summary.h"

#include <algorithm>
#include <cstdio>

#include "core/memory_budget.h"

namespace nn {
namespace {

std::string shape_of(const LayerSpec& l) {
  std::string s = std::to_string(l.n[0]);
  const int dims = std::max(1, std::min(4, l.dimensions));
  for (int d = 1; d < dims; ++d) s += "x" + std::to_string(l.n[d]);
  return s;
}

std::string kind_of(const Layer& layer) {
  const LayerSpec& l = layer.spec();
  std::string k = to_string(l.kind);
  if (l.kind == LayerKind::Input) return k + (layer.has_sparse_output() ? " (sparse)" : " (dense)");
  k += std::string(" ") + to_string(l.type);
  if (l.type == LayerType::Pooling) return k + " " + to_string(l.pooling);
  if (l.type == LayerType::Variational) return k;  // no activation: its output is the sample
  k += std::string(" ") + to_string(l.activation);
  if (!l.shared_weights.empty()) k += " (shared weights)";
  return k;
}

}  // namespace

ModelSummary summarize(Network& net) {
  ModelSummary s;
  const uint64_t rows = net.max_batch();
  for (const LayerSpec& spec : net.spec().layers) {
    Layer& layer = net.layer(spec.name);
    LayerSummary row;
    row.name = spec.name;
    row.kind = kind_of(layer);
    row.shape = shape_of(spec);
    uint64_t param_bytes = 0;
    for (Parameter* p : layer.parameters()) {
      row.parameters += p->logical_size();  // as files count them
      uint64_t arrays = p->value.size() + p->grad.size();
      for (const auto& st : p->state) arrays += st.size();
      param_bytes += arrays * sizeof(float);
    }
    // Activations, plus deltas for layers that take a gradient (sparse inputs keep CSR data,
    // counted by the data loader rather than here).
    const uint64_t act = layer.has_sparse_output()
                             ? 0
                             : rows * layer.units() * sizeof(float) * (layer.needs_delta() ? 2 : 1);
    row.bytes = param_bytes + act;
    s.parameters += row.parameters;
    s.parameter_bytes += param_bytes;
    s.activation_bytes += act;
    s.layers.push_back(std::move(row));
  }
  return s;
}

std::vector<std::string> format_summary(const ModelSummary& s, uint32_t minibatch) {
  std::vector<std::vector<std::string>> cells = {
      {"layer", "kind", "shape", "parameters", "memory"}};
  for (const auto& l : s.layers)
    cells.push_back({l.name, l.kind, l.shape, std::to_string(l.parameters), format_bytes(l.bytes)});
  cells.push_back({"total", "", "", std::to_string(s.parameters),
                   format_bytes(s.parameter_bytes + s.activation_bytes)});
  std::vector<size_t> width(5, 0);
  for (const auto& row : cells)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::vector<std::string> lines;
  for (const auto& row : cells) {
    std::string line = " ";
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      // Text columns left-aligned, numbers right-aligned.
      line += " " + (c < 3 ? row[c] + pad : pad + row[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(line);
  }
  lines.push_back("  memory: " + format_bytes(s.parameter_bytes) +
                  " of parameters (values, gradients, optimizer state) + " +
                  format_bytes(s.activation_bytes) + " of activations at minibatch " +
                  std::to_string(minibatch));
  return lines;
}

}  // namespace nn
