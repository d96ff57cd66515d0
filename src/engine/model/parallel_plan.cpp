// The data/model parallel rule and its cost model (see parallel_plan.h).
#include "model/parallel_plan.h"

#include <cstdio>

#include "core/error.h"
#include "core/format.h"
#include "core/memory_budget.h"

namespace nn {
namespace {

// "224 bytes", "12.5 kB", "33.3 MB", "1.2 GB" (decimal units: bytes on a wire).
std::string mb(uint64_t bytes) {
  char buf[32];
  if (bytes < 1000)
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  else if (bytes < 1000000)
    std::snprintf(buf, sizeof buf, "%.1f kB", double(bytes) / 1e3);
  else if (bytes < 1000000000)
    std::snprintf(buf, sizeof buf, "%.1f MB", double(bytes) / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.1f GB", double(bytes) / 1e9);
  return buf;
}

}  // namespace

std::vector<LayerChoice> choose_parallel(const std::vector<LayerCostInput>& layers,
                                         const ParallelSettings& s) {
  std::vector<LayerChoice> out;
  const double p = double(std::max(s.ranks, 1));
  const double f = (p - 1.0) / p;
  const double b = double(s.minibatch);
  for (const LayerCostInput& l : layers) {
    LayerChoice c;
    c.layer = l.name;
    uint64_t params = 0;
    double model = 0.0;
    for (const auto& src : l.sources) {
      params += (src.units + 1) * l.units;
      if (!src.input) model += f * 4.0 * b * double(src.units);                     // gather
      if (src.needs_delta && s.training) model += f * 4.0 * b * double(src.units);  // scatter
    }
    if (!l.output) model += (s.training ? 2.0 : 1.0) * f * 4.0 * b * double(l.units);
    if (l.softmax) model += 2.0 * 2.0 * f * 8.0 * b;
    const uint64_t copies = s.training ? 2 + uint64_t(s.optimizer_states) : 1;
    c.replicated_bytes = params * 4 * copies;
    c.data_bytes = s.training ? uint64_t(2.0 * f * 4.0 * double(params)) : 0;
    c.model_bytes = uint64_t(model);
    if (s.ranks <= 1) {
      c.reason = "one process";
    } else if (!l.fully_connected) {
      c.reason = "data parallel: only fully connected layers are split";
    } else if (l.requested == ParallelMode::Data) {
      c.reason = "data parallel: \"Parallel\": \"Data\" in the network";
    } else if (l.requested == ParallelMode::Model) {
      if (!l.cannot_split.empty())
        throw ConfigError("layer '" + l.name + "': \"Parallel\": \"Model\", but " + l.cannot_split);
      c.model_parallel = true;
      c.reason = "model parallel: \"Parallel\": \"Model\" in the network";
    } else if (!l.cannot_split.empty()) {
      c.reason = "data parallel: " + l.cannot_split;
    } else if (s.default_mode == ParallelMode::Data) {
      c.reason = "data parallel: \"Parallel\": \"Data\" in the command file";
    } else if (s.default_mode == ParallelMode::Model) {
      c.model_parallel = true;
      c.reason = "model parallel: \"Parallel\": \"Model\" in the command file";
    } else if (!s.keep_whole.empty()) {
      c.reason = "data parallel: " + s.keep_whole;
    } else if (s.memory_budget > 0 && c.replicated_bytes > s.memory_budget / 4) {
      c.model_parallel = true;
      c.reason = "model parallel: its weights, gradients and optimizer state (" +
                 format_bytes(c.replicated_bytes) +
                 ") take more than a quarter of a rank's memory budget (" +
                 format_bytes(s.memory_budget) + ")";
    } else if (s.predicted.size() == layers.size()) {
      const auto& t = s.predicted[out.size()];
      c.model_parallel = t.model_s < t.data_s;
      c.reason = format("%s parallel: predicted %.3f ms per step against %.3f ms %s parallel (",
                        c.model_parallel ? "model" : "data",
                        1e3 * (c.model_parallel ? t.model_s : t.data_s),
                        1e3 * (c.model_parallel ? t.data_s : t.model_s),
                        c.model_parallel ? "data" : "model") +
                 s.predicted_basis + ")";
    } else if (c.model_bytes < c.data_bytes) {
      c.model_parallel = true;
      c.reason = "model parallel: moves " + mb(c.model_bytes) + " per step against " +
                 mb(c.data_bytes) + " data parallel";
    } else {
      c.reason = "data parallel: moves " + mb(c.data_bytes) + " per step against " +
                 mb(c.model_bytes) + " model parallel";
    }
    out.push_back(c);
  }
  return out;
}

std::string describe(const LayerChoice& c) {
  return "layer '" + c.layer + "': " + c.reason;
}

}  // namespace nn
