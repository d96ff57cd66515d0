// The scaling prediction of `nn-train --plan N` (see scaling_plan.h).
#include "train/scaling_plan.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/format.h"
#include "core/memory_budget.h"

namespace nn {
namespace {

constexpr double kFloat = 4.0;

// Seconds of layer `name`'s phases in `cost` on `peaks`, split into the phases that scale with
// the rows (forward, loss, backward) and the update.
struct PhaseSeconds {
  double rows = 0.0, update = 0.0, backward = 0.0;
};
PhaseSeconds seconds_of(const StepCost& cost, const std::string& name, const MachinePeaks& peaks) {
  PhaseSeconds s;
  for (const PhaseCost& p : cost.phases) {
    if (p.layer != name) continue;
    const double t = StepCost::floor_seconds(p, peaks);
    if (p.phase == "update")
      s.update += t;
    else
      s.rows += t;
    if (p.phase == "backward") s.backward += t;
  }
  return s;
}

// Model parallel: the collectives of one step of layer `l` (parallel_plan.h's traffic, as times).
double model_comm_seconds(const LayerCostInput& l, double rows, int ranks, const LinkModel& link,
                          bool training) {
  double s = 0.0;
  for (const auto& src : l.sources) {
    const double bytes = rows * double(src.units) * kFloat;
    if (!src.input) s += all_gather_seconds(link, bytes, ranks);                   // activations
    if (src.needs_delta && training) s += all_gather_seconds(link, bytes, ranks);  // dE/dx
  }
  // A hidden layer hands its activations to the ranks' rows and takes their deltas back.
  if (!l.output)
    s += (training ? 2.0 : 1.0) * all_gather_seconds(link, rows * double(l.units) * kFloat, ranks);
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

ScalingPlan plan_scaling(const ScalingInputs& in, const LinkModel& link) {
  ScalingPlan plan;
  plan.ranks = std::max(in.settings.ranks, 1);
  plan.link = link;
  const int n = plan.ranks;
  const uint32_t batch = std::max<uint32_t>(in.settings.minibatch, 1);
  const auto rank_rows = static_cast<uint32_t>((uint64_t(batch) + n - 1) / uint64_t(n));
  // One rank; data parallel (a rank's rows).
  const StepCost one = step_cost(in.shapes, batch, in.optimizer, in.tensor, in.target_nnz);
  const StepCost data = step_cost(in.shapes, rank_rows, in.optimizer, in.tensor, in.target_nnz);
  // Model parallel: the layer's own units / N (its sources keep theirs), every row.
  auto model_cost = [&](const std::string& name) {
    std::vector<LayerShape> split = in.shapes;
    for (LayerShape& s : split)
      if (s.name == name)
        s.units = std::max<uint32_t>(1, (s.units + uint32_t(n) - 1) / uint32_t(n));
    return step_cost(split, batch, in.optimizer, in.tensor, in.target_nnz);
  };
  plan.step_one_s = one.floor_seconds(in.peaks);

  ParallelSettings settings = in.settings;
  settings.ranks = n;
  const std::vector<LayerChoice> choices = choose_parallel(in.layers, settings);
  const double states = double(in.settings.training ? 2 + in.settings.optimizer_states : 1);
  bool any_split = false;
  std::vector<double> backward_s, data_comm_s;  // per layer, for the overlap
  double compute = 0.0, blocking_comm = 0.0;
  for (size_t i = 0; i < in.layers.size(); ++i) {
    const LayerCostInput& l = in.layers[i];
    LayerScaling ls;
    ls.layer = l.name;
    ls.model_parallel = choices[i].model_parallel;
    ls.reason = choices[i].reason;
    const PhaseSeconds d = seconds_of(data, l.name, in.peaks);
    const PhaseSeconds o = seconds_of(one, l.name, in.peaks);
    const PhaseSeconds m = seconds_of(model_cost(l.name), l.name, in.peaks);
    // Data parallel: its rows' passes, the whole update; the weights' all-reduce.
    const double data_compute = d.rows + o.update;
    const double data_comm = all_reduce_seconds(link, parameters_of(l) * kFloat, n);
    const double model_compute = m.rows + m.update;
    const double model_comm = model_comm_seconds(l, batch, n, link, in.settings.training);
    const double params = parameters_of(l) * kFloat * states;
    double units_rows = 0.0;  // activations and deltas the rank computes
    if (ls.model_parallel) {
      ls.compute_s = model_compute;
      ls.comm_s = model_comm;
      ls.other_compute_s = data_compute;
      ls.other_comm_s = data_comm;
      units_rows = double(batch) * std::ceil(double(l.units) / n);
      for (const auto& src : l.sources)  // the gathered sources
        if (!src.input) units_rows += double(batch) * double(src.units);
      ls.memory_bytes = params / n + 2.0 * units_rows * kFloat;
      any_split = true;
      blocking_comm += model_comm;
      backward_s.push_back(m.backward);
      data_comm_s.push_back(0.0);
    } else {
      ls.compute_s = data_compute;
      ls.comm_s = data_comm;
      ls.other_compute_s = model_compute;
      ls.other_comm_s = model_comm;
      units_rows = double(rank_rows) * double(l.units);
      ls.memory_bytes = params + 2.0 * units_rows * kFloat;
      backward_s.push_back(d.backward);
      data_comm_s.push_back(data_comm);
    }
    compute += ls.compute_s;
    plan.memory_one_bytes += params + 2.0 * double(batch) * double(l.units) * kFloat;
    plan.layers.push_back(ls);
  }
  // Data-parallel all-reduces: overlapped with the backward pass of the layers below, one at a
  // time, as the gradient buckets are; after the backward pass when a layer is split.
  double overlap_end = 0.0, channel = 0.0, backward_total = 0.0;
  for (size_t k = in.layers.size(); k-- > 0;) {
    backward_total += backward_s[k];
    if (data_comm_s[k] <= 0.0) continue;
    const double start = any_split ? std::max(channel, 0.0) : std::max(channel, backward_total);
    channel = start + data_comm_s[k];
  }
  overlap_end = channel;
  const double data_exposed = any_split ? channel : std::max(0.0, overlap_end - backward_total);
  plan.exposed_comm_s = blocking_comm + data_exposed;
  plan.step_s = n > 1 ? compute + plan.exposed_comm_s : plan.step_one_s;
  const double steps = std::ceil(double(in.examples) / double(batch));
  plan.epoch_s = steps * plan.step_s;
  plan.epoch_one_s = steps * plan.step_one_s;

  // What limits scaling: the largest part of the N-rank step.
  double worst = 0.0;
  for (const LayerScaling& ls : plan.layers) {
    const double comm = ls.model_parallel ? ls.comm_s : 0.0;
    if (comm > worst) {
      worst = comm;
      plan.limit = format("layer '%s': its collectives take %.3f ms per step (model parallel)",
                          ls.layer.c_str(), comm * 1e3);
    }
    if (ls.compute_s > worst) {
      worst = ls.compute_s;
      const bool update_bound =
          !ls.model_parallel && ls.compute_s > 0 &&
          (ls.compute_s - seconds_of(data, ls.layer, in.peaks).rows) > 0.5 * ls.compute_s;
      plan.limit = format("layer '%s': its compute takes %.3f ms per step", ls.layer.c_str(),
                          ls.compute_s * 1e3) +
                   (update_bound ? " (mostly its update, which every rank does whole when data "
                                   "parallel)"
                                 : "");
    }
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
  out.push_back(format("plan for %d ranks over %s (%.3g GB/s bus bandwidth, %.0f us per hop: ",
                       plan.ranks, l.name.c_str(), l.bytes_per_s / 1e9, l.latency_s * 1e6) +
                l.source + ")");
  out.push_back(format("compute from the floors at %.1f GFLOP/s and %.1f GB/s (",
                       in.peaks.tensor_flops / 1e9, in.peaks.bytes_per_s / 1e9) +
                in.peaks_source +
                format("), minibatch %u, %.0f examples per epoch", in.settings.minibatch,
                       double(in.examples)));
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
