// The scaling prediction of `nn-train --plan N` (see scaling_plan.h).
#include "train/scaling_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "core/error.h"
#include "core/format.h"
#include "core/memory_budget.h"

namespace nn {
namespace {

constexpr double kFloat = 4.0;

// Seconds of layer `name`'s phases in `cost` on `peaks`, split into the phases that scale with
// the rows (forward, loss, backward) and the update; each floor times `efficiency` of its part.
struct PhaseSeconds {
  double rows = 0.0, update = 0.0, backward = 0.0;
};
using Efficiency = std::map<std::pair<std::string, std::string>, double>;
PhaseSeconds seconds_of(const StepCost& cost, const std::string& name, const MachinePeaks& peaks,
                        const Efficiency& efficiency) {
  PhaseSeconds s;
  for (const PhaseCost& p : cost.phases) {
    if (p.layer != name) continue;
    const auto e = efficiency.find({p.phase, p.layer});
    const double t = StepCost::floor_seconds(p, peaks) * (e == efficiency.end() ? 1.0 : e->second);
    if (p.phase == "update")
      s.update += t;
    else
      s.rows += t;
    if (p.phase == "backward") s.backward += t;
  }
  return s;
}

// measured / floor per (phase, layer) of the one-rank step, where both are known and positive.
Efficiency efficiency_of(const ScalingInputs& in, const StepCost& one) {
  Efficiency out;
  std::map<std::pair<std::string, std::string>, double> floors;
  for (const PhaseCost& p : one.phases)
    floors[{p.phase, p.layer}] += StepCost::floor_seconds(p, in.peaks);
  if (in.measured.empty()) {
    if (in.compute_scale != 1.0)
      for (const auto& [key, floor] : floors) out[key] = in.compute_scale;
    return out;
  }
  for (const auto& [key, floor] : floors) {
    const auto m = in.measured.find(key);
    if (m != in.measured.end() && m->second > 0 && floor > 0) out[key] = m->second / floor;
  }
  return out;
}

// The measured step beyond the parts the floors model (data waits, launches, bookkeeping).
double other_seconds(const ScalingInputs& in, const StepCost& one) {
  if (in.measured.empty()) return 0.0;
  std::set<std::pair<std::string, std::string>> modelled;
  for (const PhaseCost& p : one.phases) modelled.insert({p.phase, p.layer});
  double parts = 0.0;
  for (const auto& [key, seconds] : in.measured)
    if (modelled.count(key)) parts += seconds;
  return std::max(0.0, in.measured_step_s - parts);
}

// Model parallel: the collectives of one step of layer `l` (parallel_plan.h's traffic, as times).
double model_comm_seconds(const LayerCostInput& l, double rows, int ranks, const LinkModel& link,
                          bool training) {
  double s = 0.0;
  for (const auto& src : l.sources) {
    const double bytes = rows * double(src.units) * kFloat;
    if (!src.input) s += all_gather_seconds(link, bytes, ranks);  // activations
    if (src.needs_delta && training) s += reduce_scatter_seconds(link, bytes, ranks);  // dE/dx
  }
  // A hidden layer hands its activations to the ranks' rows and takes their deltas back: each
  // an all-to-all done as a reduce-scatter of the whole minibatch's values (zeros elsewhere).
  if (!l.output)
    s += (training ? 2.0 : 1.0) *
         reduce_scatter_seconds(link, rows * double(l.units) * kFloat, ranks);
  // SoftMax normalises over the ranks: each row's maximum and sum.
  if (l.softmax) s += 2.0 * all_reduce_seconds(link, rows * 8.0, ranks);
  return s;
}

double parameters_of(const LayerCostInput& l) {
  double n = 0.0;
  for (const auto& src : l.sources) n += (double(src.units) + 1.0) * double(l.units);
  return n;
}

}  // namespace

namespace {

// The shapes every prediction of one plan shares.
struct Costs {
  int n = 1;
  uint32_t batch = 1, rank_rows = 1;
  StepCost one, data;
  Efficiency efficiency;
};

Costs costs_of(const ScalingInputs& in) {
  Costs c;
  c.n = std::max(in.settings.ranks, 1);
  c.batch = std::max<uint32_t>(in.settings.minibatch, 1);
  c.rank_rows = static_cast<uint32_t>((uint64_t(c.batch) + c.n - 1) / uint64_t(c.n));
  c.one = step_cost(in.shapes, c.batch, in.optimizer, in.tensor, in.target_nnz);
  c.data = step_cost(in.shapes, c.rank_rows, in.optimizer, in.tensor, in.target_nnz);
  c.efficiency = efficiency_of(in, c.one);
  return c;
}

// Model parallel: the layer's own units / N (its sources keep theirs), every row.
StepCost model_cost(const ScalingInputs& in, const Costs& c, const std::string& name) {
  std::vector<LayerShape> split = in.shapes;
  for (LayerShape& s : split)
    if (s.name == name)
      s.units = std::max<uint32_t>(1, (s.units + uint32_t(c.n) - 1) / uint32_t(c.n));
  return step_cost(split, c.batch, in.optimizer, in.tensor, in.target_nnz);
}

struct LayerModes {
  ModeSeconds t;
  double data_backward = 0.0, model_backward = 0.0, data_rows = 0.0;
  double data_blocking = 0.0;  // the part of t.data_comm that no backward pass overlaps
};

const LayerShape* shape_named(const ScalingInputs& in, const std::string& name) {
  for (const LayerShape& s : in.shapes)
    if (s.name == name) return &s;
  return nullptr;
}

// Data parallel: the gradient exchange of layer `l` in one step. Its weights go through the
// dense all-reduce buckets (overlapped with the backward pass), except the matrix of a sparse
// input updated row by row (train/row_sparse.h): there the ranks first agree on the rows the
// minibatch touched (an all-gather of a count, then of each rank's row indices) and sum only
// those rows, after the backward pass. Returns {all seconds, the blocking part}.
std::pair<double, double> data_comm_seconds(const ScalingInputs& in, const Costs& c,
                                            const LayerCostInput& l, const LinkModel& link) {
  if (!in.settings.training) return {0.0, 0.0};
  double dense_floats = parameters_of(l), blocking = 0.0;
  if (const LayerShape* self = shape_named(in, l.name)) {
    for (const std::string& source : self->sources) {
      const LayerShape* s = shape_named(in, source);
      if (s == nullptr || !s->sparse_input || !s->row_sparse_update) continue;
      const double k = std::max(s->nnz_per_row, 1.0);
      const double all_rows = double(s->units);
      const double touched = s->touched_rows > 0 ? std::min(s->touched_rows, all_rows)
                                                 : std::min(c.batch * k, all_rows);
      const double per_rank = std::min(touched, double(c.rank_rows) * k);
      dense_floats -= all_rows * double(l.units);
      blocking += all_gather_seconds(link, 8.0 * c.n, c.n) +
                  all_gather_seconds(link, per_rank * c.n * 4.0, c.n) +
                  all_reduce_seconds(link, touched * double(l.units) * kFloat, c.n);
    }
  }
  const double dense = all_reduce_seconds(link, std::max(dense_floats, 0.0) * kFloat, c.n);
  return {dense + blocking, blocking};
}

LayerModes modes_of(const ScalingInputs& in, const Costs& c, const LayerCostInput& l,
                    const LinkModel& link) {
  LayerModes out;
  const PhaseSeconds d = seconds_of(c.data, l.name, in.peaks, c.efficiency);
  const PhaseSeconds o = seconds_of(c.one, l.name, in.peaks, c.efficiency);
  const PhaseSeconds m = seconds_of(model_cost(in, c, l.name), l.name, in.peaks, c.efficiency);
  // Data parallel: its rows' passes, the whole update; the weights' all-reduce.
  out.t.data_compute = d.rows + o.update;
  const auto [data_comm, data_blocking] = data_comm_seconds(in, c, l, link);
  out.t.data_comm = data_comm;
  out.data_blocking = data_blocking;
  out.t.model_compute = m.rows + m.update;
  out.t.model_comm = model_comm_seconds(l, c.batch, c.n, link, in.settings.training);
  out.data_backward = d.backward;
  out.model_backward = m.backward;
  out.data_rows = d.rows;
  return out;
}

}  // namespace

std::vector<ModeSeconds> predict_modes(const ScalingInputs& in, const LinkModel& link) {
  const Costs c = costs_of(in);
  std::vector<ModeSeconds> out;
  for (const LayerCostInput& l : in.layers) out.push_back(modes_of(in, c, l, link).t);
  return out;
}

const std::vector<DevicePeaks>& device_presets() {
  // FP32 and TF32 peaks of cuBLAS as this project's benchmark measured them on an H100 SXM
  // (docs/gpu-report.md); bandwidths are the HBM specifications (an H200 has the H100's SMs).
  static const std::vector<DevicePeaks> presets = {
      {"h100-sxm",
       {47.6e12, 47.6e12, 3.35e12},
       "H100 SXM5: 47.6 TFLOP/s FP32 sgemm as measured by nn-bench-autoencoder on one "
       "(docs/gpu-report.md), 3.35 TB/s HBM3"},
      {"h200",
       {47.6e12, 47.6e12, 4.8e12},
       "H200: the H100's SMs (47.6 TFLOP/s FP32 sgemm measured on an H100), 4.8 TB/s HBM3e"},
  };
  return presets;
}

DevicePeaks device_preset(const std::string& name) {
  std::string want, names;
  for (char ch : name) want += char(std::tolower(static_cast<unsigned char>(ch)));
  for (const DevicePeaks& d : device_presets()) {
    if (d.name == want) return d;
    names += (names.empty() ? "" : ", ") + d.name;
  }
  throw ConfigError("device \"" + name + "\": expected one of " + names);
}

std::string describe_link(const LinkModel& link) {
  for (const LinkModel& p : link_presets())
    if (p.name == link.name) return link.name + " (preset)";
  return link.name + " (measured)";
}

ScalingPlan plan_scaling(const ScalingInputs& in, const LinkModel& link) {
  ScalingPlan plan;
  const Costs c = costs_of(in);
  plan.ranks = c.n;
  plan.link = link;
  const int n = c.n;
  const uint32_t batch = c.batch;
  plan.other_s = other_seconds(in, c.one);
  plan.step_one_s =
      in.measured.empty() ? in.compute_scale * c.one.floor_seconds(in.peaks) : in.measured_step_s;

  std::vector<LayerModes> modes;
  ParallelSettings settings = in.settings;
  settings.ranks = n;
  settings.predicted.clear();
  for (const LayerCostInput& l : in.layers) {
    modes.push_back(modes_of(in, c, l, link));
    const ModeSeconds& t = modes.back().t;
    settings.predicted.push_back({t.data_compute + t.data_comm, t.model_compute + t.model_comm});
  }
  settings.predicted_basis = "over " + describe_link(link);
  const std::vector<LayerChoice> choices = choose_parallel(in.layers, settings);
  const double states = double(in.settings.training ? 2 + in.settings.optimizer_states : 1);
  bool any_split = false;
  std::vector<double> backward_s, data_comm_s;  // per layer, for the overlap
  double compute = plan.other_s, blocking_comm = 0.0;
  for (size_t i = 0; i < in.layers.size(); ++i) {
    const LayerCostInput& l = in.layers[i];
    const LayerModes& lm = modes[i];
    LayerScaling ls;
    ls.layer = l.name;
    ls.model_parallel = choices[i].model_parallel;
    ls.reason = choices[i].reason;
    const double params = parameters_of(l) * kFloat * states;
    double units_rows = 0.0;  // activations and deltas the rank computes
    if (ls.model_parallel) {
      ls.compute_s = lm.t.model_compute;
      ls.comm_s = lm.t.model_comm;
      ls.other_compute_s = lm.t.data_compute;
      ls.other_comm_s = lm.t.data_comm;
      units_rows = double(batch) * std::ceil(double(l.units) / n);
      for (const auto& src : l.sources)  // the gathered sources
        if (!src.input) units_rows += double(batch) * double(src.units);
      ls.memory_bytes = params / n + 2.0 * units_rows * kFloat;
      any_split = true;
      blocking_comm += ls.comm_s;
      backward_s.push_back(lm.model_backward);
      data_comm_s.push_back(0.0);
    } else {
      ls.compute_s = lm.t.data_compute;
      ls.comm_s = lm.t.data_comm;
      ls.other_compute_s = lm.t.model_compute;
      ls.other_comm_s = lm.t.model_comm;
      units_rows = double(c.rank_rows) * double(l.units);
      ls.memory_bytes = params + 2.0 * units_rows * kFloat;
      backward_s.push_back(lm.data_backward);
      blocking_comm += lm.data_blocking;
      data_comm_s.push_back(ls.comm_s - lm.data_blocking);
    }
    compute += ls.compute_s;
    plan.memory_one_bytes += params + 2.0 * double(batch) * double(l.units) * kFloat;
    plan.layers.push_back(ls);
  }
  // Data-parallel all-reduces: overlapped with the backward pass of the layers below, one at a
  // time, as the gradient buckets are; after the backward pass when a layer is split.
  double channel = 0.0, backward_total = 0.0;
  for (size_t k = in.layers.size(); k-- > 0;) {
    backward_total += backward_s[k];
    if (data_comm_s[k] <= 0.0) continue;
    const double start = any_split ? std::max(channel, 0.0) : std::max(channel, backward_total);
    channel = start + data_comm_s[k];
  }
  const double data_exposed = any_split ? channel : std::max(0.0, channel - backward_total);
  plan.exposed_comm_s = blocking_comm + data_exposed;
  plan.step_s = n > 1 ? compute + plan.exposed_comm_s : plan.step_one_s;
  const double steps = std::ceil(double(in.examples) / double(batch));
  plan.epoch_s = steps * plan.step_s;
  plan.epoch_one_s = steps * plan.step_one_s;

  // What limits scaling: the largest part of the N-rank step.
  double worst = 0.0;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const LayerScaling& ls = plan.layers[i];
    const double comm = ls.model_parallel ? ls.comm_s : 0.0;
    if (comm > worst) {
      worst = comm;
      plan.limit = format("layer '%s': its collectives take %.3f ms per step (model parallel)",
                          ls.layer.c_str(), comm * 1e3);
    }
    if (ls.compute_s > worst) {
      worst = ls.compute_s;
      const bool update_bound = !ls.model_parallel && ls.compute_s > 0 &&
                                (ls.compute_s - modes[i].data_rows) > 0.5 * ls.compute_s;
      plan.limit = format("layer '%s': its compute takes %.3f ms per step", ls.layer.c_str(),
                          ls.compute_s * 1e3) +
                   (update_bound ? " (mostly its update, which every rank does whole when data "
                                   "parallel)"
                                 : "");
    }
  }
  if (plan.other_s > worst) {
    worst = plan.other_s;
    plan.limit = format(
        "the step's unmodelled rest (data waits, launches, bookkeeping): %.3f ms per step, "
        "which does not shrink with more ranks",
        plan.other_s * 1e3);
  }
  if (data_exposed > worst)
    plan.limit = format(
        "the data-parallel gradient all-reduces: %.3f ms per step not hidden by "
        "the backward pass",
        data_exposed * 1e3);
  return plan;
}

std::vector<std::string> format_scaling_plan(const ScalingPlan& plan, const ScalingInputs& in) {
  std::vector<std::string> out;
  const LinkModel& l = plan.link;
  out.push_back(
      format("plan for %d ranks over %s (%.3g GB/s bus bandwidth, %.1f us per hop: ", plan.ranks,
             describe_link(l).c_str(), l.bytes_per_s / 1e9, l.latency_s * 1e6) +
      l.source + ")");
  if (in.measured.empty())
    out.push_back(format("compute from the floors at %.1f GFLOP/s and %.1f GB/s (",
                         in.peaks.tensor_flops / 1e9, in.peaks.bytes_per_s / 1e9) +
                  in.peaks_source +
                  (in.compute_scale != 1.0
                       ? format(") times %.3g (a measured one-rank step of %.3f ms)",
                                in.compute_scale, plan.step_one_s * 1e3)
                       : std::string(")")) +
                  format(", minibatch %u, %.0f examples per epoch", in.settings.minibatch,
                         double(in.examples)));
  else
    out.push_back(format("compute measured: %.3f ms per step in ", in.measured_step_s * 1e3) +
                  in.measured_source +
                  format("; each part scaled by its floor at %.1f GFLOP/s and %.1f GB/s, the "
                         "rest (%.3f ms) added to every step; minibatch %u, %.0f examples per "
                         "epoch",
                         in.peaks.tensor_flops / 1e9, in.peaks.bytes_per_s / 1e9,
                         plan.other_s * 1e3, in.settings.minibatch, double(in.examples)));
  size_t width = 5;
  for (const LayerScaling& ls : plan.layers) width = std::max(width, ls.layer.size());
  out.push_back(format("  %-*s %-5s %12s %12s %14s %26s", int(width), "layer", "mode", "compute ms",
                       "comm ms", "memory/rank", "other mode: compute + comm"));
  for (const LayerScaling& ls : plan.layers) {
    const bool other_faster =
        ls.other_compute_s + ls.other_comm_s < 0.9 * (ls.compute_s + ls.comm_s);
    out.push_back(format("  %-*s %-5s %12.3f %12.3f %14s %12.3f + %.3f ms%s", int(width),
                         ls.layer.c_str(), ls.model_parallel ? "model" : "data", ls.compute_s * 1e3,
                         ls.comm_s * 1e3, format_bytes(uint64_t(ls.memory_bytes)).c_str(),
                         ls.other_compute_s * 1e3, ls.other_comm_s * 1e3,
                         other_faster ? " (faster)" : ""));
  }
  for (const LayerScaling& ls : plan.layers)
    out.push_back("  layer '" + ls.layer + "': " + ls.reason);
  out.push_back(
      format("predicted step: %.3f ms on %d ranks (%.3f ms of it communication not "
             "hidden by compute); 1 rank: %.3f ms; speed-up %.2fx",
             plan.step_s * 1e3, plan.ranks, plan.exposed_comm_s * 1e3, plan.step_one_s * 1e3,
             plan.step_one_s / std::max(plan.step_s, 1e-12)));
  if (!plan.limit.empty()) out.push_back("limit: " + plan.limit);
  out.push_back(format("predicted epoch: %.3f s on %d ranks (1 rank: %.3f s)", plan.epoch_s,
                       plan.ranks, plan.epoch_one_s));
  return out;
}

}  // namespace nn
