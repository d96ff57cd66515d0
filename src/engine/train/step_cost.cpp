// The floor of one training step (train/step_cost.h): FLOPs and bytes per layer and phase.
#include "train/step_cost.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "backend/backend.h"
#include "backend/device_array.h"
#include "backend/kernel_params.h"
#include "data/dataset.h"
#include "model/network.h"

namespace nn {
namespace {

constexpr double kFloat = 4.0;
constexpr double kSparseEntry = 8.0;  // a column index and a value

const LayerShape* find(const std::vector<LayerShape>& layers, const std::string& name) {
  for (const LayerShape& l : layers)
    if (l.name == name) return &l;
  return nullptr;
}

// Whether any layer takes `name`'s output as a source and needs a delta back from it (every
// layer but an input one).
bool takes_delta(const LayerShape& l) {
  return l.kind != LayerKind::Input;
}

}  // namespace

double StepCost::flops() const {
  double f = 0;
  for (const PhaseCost& p : phases) f += p.flops;
  return f;
}

double StepCost::bytes() const {
  double b = 0;
  for (const PhaseCost& p : phases) b += p.bytes;
  return b;
}

double StepCost::floor_seconds(const PhaseCost& p, const MachinePeaks& peaks) {
  const double peak = p.tensor ? peaks.tensor_flops : peaks.fp32_flops;
  const double compute = peak > 0 ? p.flops / peak : 0.0;
  const double memory = peaks.bytes_per_s > 0 ? p.bytes / peaks.bytes_per_s : 0.0;
  return std::max(compute, memory);
}

double StepCost::floor_seconds(const MachinePeaks& peaks) const {
  double s = 0;
  for (const PhaseCost& p : phases) s += floor_seconds(p, peaks);
  return s;
}

std::map<std::string, double> StepCost::floor_by_phase(const MachinePeaks& peaks) const {
  std::map<std::string, double> out;
  for (const PhaseCost& p : phases) out[p.phase] += floor_seconds(p, peaks);
  return out;
}

StepCost step_cost(const std::vector<LayerShape>& layers, uint32_t batch, OptimizerKind optimizer,
                   bool tensor, const std::map<std::string, double>& target_nnz) {
  StepCost cost;
  const double B = batch;
  // Floats moved per parameter by one exact update: w and g read, w written, each state array
  // read and written.
  const double update_floats = 3.0 + 2.0 * optimizer_state_count(optimizer);
  for (const LayerShape& l : layers) {
    if (l.kind == LayerKind::Input) continue;
    const double out = l.units;
    const double activations = B * out * kFloat;
    if (l.type != LayerType::FullyConnected) {
      // Counted by its activations alone: written forward, read and written backward.
      cost.unmodelled.push_back(l.name);
      cost.phases.push_back({l.name, "forward", 0, 2 * activations, false});
      cost.phases.push_back({l.name, "backward", 0, 3 * activations, false});
      continue;
    }
    PhaseCost forward{l.name, "forward", 0, 0, false};
    PhaseCost sparse_forward{l.name, "forward", 0, 0, false};
    PhaseCost backward{l.name, "backward", 0, 0, false};
    PhaseCost sparse_backward{l.name, "backward", 0, 0, false};
    PhaseCost update{l.name, "update", 0, 0, false};
    for (const std::string& name : l.sources) {
      const LayerShape* s = find(layers, name);
      if (!s) continue;
      const double in = s->units;
      if (s->sparse_input) {
        const double k = std::min(s->nnz_per_row, in);
        const double touched_rows =
            s->touched_rows > 0 ? std::min(s->touched_rows, in) : std::min(B * k, in);
        sparse_forward.flops += 2 * B * k * out;
        sparse_forward.bytes += touched_rows * out * kFloat + B * k * kSparseEntry;
        sparse_backward.flops += 2 * B * k * out;  // the weight gradient's touched rows
        sparse_backward.bytes += B * k * kSparseEntry + activations + touched_rows * out * kFloat;
        update.bytes += update_floats * (s->row_sparse_update ? touched_rows : in) * out * kFloat;
      } else {
        forward.flops += 2 * B * in * out;
        forward.bytes += in * out * kFloat + B * in * kFloat;
        backward.flops += 2 * B * in * out;  // weight gradient
        backward.bytes += B * in * kFloat + activations + in * out * kFloat;
        if (takes_delta(*s)) {  // dX = delta W^T
          backward.flops += 2 * B * in * out;
          backward.bytes += in * out * kFloat + activations + B * in * kFloat;
        }
        update.bytes += update_floats * in * out * kFloat;
      }
    }
    // The layer's own passes: z written (and the bias read); a hidden layer's activation in
    // place; its derivative in backward; the bias gradient reads the delta.
    forward.bytes += activations + (l.has_bias ? out * kFloat : 0.0);
    if (l.kind != LayerKind::Output && !l.identity) {
      forward.bytes += 2 * activations;
      backward.bytes += 3 * activations;
    }
    if (l.has_bias) {
      backward.bytes += activations + out * kFloat;
      update.bytes += update_floats * out * kFloat;
    }
    forward.tensor = backward.tensor = tensor;
    cost.phases.push_back(forward);
    if (sparse_forward.flops > 0) cost.phases.push_back(sparse_forward);
    if (l.kind == LayerKind::Output) {
      // The fused activation and loss: z and the targets read, the delta written.
      const auto t = target_nnz.find(l.name);
      const double targets = t != target_nnz.end() ? B * t->second * kSparseEntry : activations;
      cost.phases.push_back({l.name, "loss", 10 * B * out, 2 * activations + targets, false});
    }
    cost.phases.push_back(backward);
    if (sparse_backward.flops > 0) cost.phases.push_back(sparse_backward);
    cost.phases.push_back(update);
  }
  return cost;
}

MachinePeaks measure_peaks(Backend& backend, int n, size_t bytes) {
  using Clock = std::chrono::steady_clock;
  auto best_of = [&](int repeats, auto&& run) {
    run();  // warm-up (first-use set-up, lazy allocation)
    backend.synchronize();
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
      const auto t = Clock::now();
      run();
      backend.synchronize();
      best = std::min(best, std::chrono::duration<double>(Clock::now() - t).count());
    }
    return std::max(best, 1e-12);
  };
  MachinePeaks peaks;
  {
    const size_t elements = size_t(n) * size_t(n);
    DeviceArray<float> a(backend, elements), b(backend, elements), c(backend, elements);
    backend.fill(a.data(), elements, 0.5f);
    backend.fill(b.data(), elements, 0.25f);
    const double s = best_of(3, [&] {
      backend.gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    });
    peaks.tensor_flops = peaks.fp32_flops = 2.0 * n * double(n) * n / s;
  }
  {
    // y += a x: two arrays read, one written, spread over the backend's threads (a copy may run
    // on one CPU core and understate the memory system).
    const size_t elements = bytes / sizeof(float);
    DeviceArray<float> x(backend, elements), y(backend, elements);
    backend.fill(x.data(), elements, 1.0f);
    backend.fill(y.data(), elements, 0.0f);
    const double s = best_of(3, [&] { backend.axpy(elements, 1e-3f, x.data(), y.data()); });
    peaks.bytes_per_s = 3.0 * double(elements * sizeof(float)) / s;
  }
  return peaks;
}

double mean_distinct_rows(const ExampleSet& d, uint32_t rows, uint32_t batches) {
  const uint64_t columns = d.features();
  if (!d.is_sparse() || rows == 0 || columns == 0) return 0.0;
  std::vector<uint32_t> mark(columns, 0);  // batch number (1-based) that last saw a column
  uint64_t distinct = 0;
  uint32_t counted = 0;
  const uint64_t examples = std::min<uint64_t>(d.unique_examples, d.sparse_start.size());
  for (uint64_t first = 0; first < examples && counted < batches; first += rows) {
    ++counted;
    const uint64_t last = std::min<uint64_t>(examples, first + rows);
    for (uint64_t e = first; e < last; ++e)
      for (uint64_t i = d.sparse_start[e]; i < d.sparse_end[e]; ++i) {
        const uint32_t c = d.sparse_index[i];
        if (c < columns && mark[c] != counted) {
          mark[c] = counted;
          ++distinct;
        }
      }
  }
  return counted ? double(distinct) / counted : 0.0;
}

std::vector<LayerShape> layer_shapes(const Network& net,
                                     const std::map<std::string, double>& input_nnz) {
  std::vector<LayerShape> out;
  for (const Layer* l : net.order()) {
    LayerShape s;
    const LayerSpec& spec = l->spec();
    s.name = l->name();
    s.kind = l->kind();
    s.type = spec.type;
    s.units = l->units();
    s.sparse_input = l->has_sparse_output();
    const auto nnz = input_nnz.find(s.name);
    if (nnz != input_nnz.end()) s.nnz_per_row = nnz->second;
    s.identity = spec.activation == Activation::Linear;
    for (const Layer* src : l->sources()) s.sources.push_back(src->name());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace nn
