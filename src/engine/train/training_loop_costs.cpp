// TrainingLoop's account of its own cost: the --profile report at the end of a run (table,
// floors, trace), the floor of one step from the network's shapes and the measured peaks, and
// the --plan scaling report. The loop itself is training_loop.cpp.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/format.h"
#include "core/profile_report.h"
#include "distributed/device_placement.h"
#include "train/floor_report.h"
#include "train/scaling_plan.h"
#include "train/step_cost.h"
#include "train/training_loop.h"

namespace nn {

void TrainingLoop::report_profile() {
  profiler_->finish();
  if (comm_->rank() != 0) return;
  const ProfileSource source{comm_->rank(), comm_->size(), net_.backend().name()};
  if (profile_outputs_.table) {
    for (const std::string& line : profile_table(*profiler_, source)) log_(line);
    for (const std::string& line : profile_floors()) log_(line);
    for (const std::string& line : net_.backend().path_notes()) log_("profile: " + line);
  }
  if (!net_.backend().host_memory() && !graph_off_.empty())
    log_("profile: CUDA graphs: not used: " + graph_off_);
  if (!profile_outputs_.trace_path.empty()) {
    write_profile_trace(*profiler_, source, profile_outputs_.trace_path);
    log_("profile: trace of " + std::to_string(profiler_->events().size()) + " events in " +
         profile_outputs_.trace_path + " (open it in ui.perfetto.dev or chrome://tracing)");
  }
}

std::vector<std::string> TrainingLoop::profile_floors() {
  if (options_.least_squares) return {};
  const StepFloor floor = step_floor();
  if (!floor.why_not.empty()) return {"profile: floors: " + floor.why_not};
  return floor_table(*profiler_, floor.cost, floor.peaks, floor.basis);
}

std::vector<std::string> TrainingLoop::scaling_report(const ParallelSettings& parallel,
                                                      const LinkModel& link, const PlanRun& how) {
  const StepFloor floor = step_floor();
  if (!floor.why_not.empty()) throw ConfigError("--plan: the step's cost is " + floor.why_not);
  ScalingInputs in;
  in.shapes = floor.shapes;
  in.target_nnz = floor.target_nnz;
  in.tensor = floor.tensor;
  in.settings = parallel;
  in.layers = net_.parallel_inputs(parallel.ranks);
  in.optimizer = options_.optimizer.kind;
  in.peaks = floor.peaks;
  in.peaks_source = "measured on this machine's " + net_.backend().name() + " backend";
  in.examples = data_.examples;
  if (how.device) {
    in.peaks = how.device->peaks;
    in.peaks_source = how.device->source;
    in.tensor = false;  // the device's FP32 peak
    if (how.device_step_s > 0) {
      const double floor_s =
          step_cost(in.shapes, parallel.minibatch, in.optimizer, false, in.target_nnz)
              .floor_seconds(in.peaks);
      in.compute_scale = how.device_step_s / std::max(floor_s, 1e-12);
    }
  } else if (how.steps > 0) {
    // Untimed steps first (first touch of memory, caches, the allocator), then the timed ones.
    options_.epochs = std::numeric_limits<uint32_t>::max();
    options_.max_steps = step_ + how.warmup;
    if (how.warmup > 0) run();
    ProfilerOptions timed;
    timed.leave_out_first_step = false;  // the untimed steps above did the set-up
    Profiler profiler(net_.backend().make_profile_clock(), timed);
    set_profiler(&profiler, ProfileOutputs{false, ""});
    options_.max_steps = step_ + how.steps;
    run();
    set_profiler(nullptr);
    const double n = double(std::max<uint64_t>(profiler.steps(), 1));
    for (const ProfileTotal& t : profiler.totals()) {
      if (!t.top_level) continue;
      const ProfileKey& k = profiler.key(t.key);
      in.measured[{phase_name(k.phase), k.label}] += t.microseconds * 1e-6 / n;
    }
    in.measured_step_s = profiler.step_microseconds() * 1e-6 / n;
    in.measured_source =
        format("a profiled run of %.0f steps (after %u untimed) on this machine's ", n,
               how.warmup) +
        net_.backend().name() + " backend";
  }
  return format_scaling_plan(plan_scaling(in, link), in);
}

StepFloor TrainingLoop::step_floor() {
  // What the floors' model does not describe is left out with the reason.
  StepFloor out;
  if (options_.least_squares) out.why_not = "not computed for closed-form training";
  if (model_parallel_) out.why_not = "not computed for layers split over processes";
  if (stream_)
    out.why_not = "not computed for streamed data (its non-zeros per row are not known up front)";
  if (!out.why_not.empty()) return out;
  // Mean non-zeros per row of the sparse inputs and targets.
  std::map<std::string, double> input_nnz, target_nnz;
  auto mean_nnz = [](const ExampleSet& d) {
    return double(d.nnz()) / double(std::max<uint64_t>(1, d.unique_examples));
  };
  for (const LayerData& in : data_.inputs)
    if (in.dataset->is_sparse()) input_nnz[in.layer] = mean_nnz(*in.dataset);
  for (const LayerData& out_data : data_.outputs)
    if (out_data.dataset->is_sparse()) target_nnz[out_data.layer] = mean_nnz(*out_data.dataset);
  // This process's rows of a full minibatch; dense products in TF32 or BF16 at the tensor peak.
  const uint32_t batch =
      static_cast<uint32_t>(std::min<uint64_t>(options_.minibatch, data_.examples));
  const uint32_t rows = rank_rows(batch, comm_->rank(), comm_->size()).count;
  std::vector<LayerShape> shapes = layer_shapes(net_, input_nnz);
  std::string basis = std::to_string(rows) + " rows";
  for (LayerShape& shape : shapes) {
    for (const LayerData& in : data_.inputs) {
      if (in.layer != shape.name || !in.dataset->is_sparse()) continue;
      shape.touched_rows = mean_distinct_rows(*in.dataset, rows);
      shape.row_sparse_update = row_sparse_ && row_sparse_->updates_rows_of(shape.name);
      basis += format(", %.1f non-zeros per row and %.0f distinct rows per batch of ",
                      input_nnz[shape.name], shape.touched_rows) +
               shape.name + (shape.row_sparse_update ? " (updated row by row)" : "");
    }
  }
  // A sampled output layer computes its steps' columns: the floor of that width (before its
  // first step, estimated as the minibatch's distinct targets and the negatives).
  if (sampled_)
    for (LayerShape& shape : shapes) {
      if (shape.name != sampled_->layer().name()) continue;
      double columns = sampled_->mean_columns();
      const char* how = "";
      if (columns == 0) {
        columns = std::min<double>(
            shape.units, mean_distinct_rows(*data_.outputs[sampled_->output()].dataset, rows) +
                             sampled_->layer().spec().sampling.negatives);
        how = " (estimated: the distinct targets and the negatives)";
      }
      shape.units = static_cast<uint32_t>(std::lround(columns));
      basis += format(", %u sampled columns per step of ", shape.units) + shape.name + how;
    }
  Backend& be = net_.backend();
  const char* tf32 = std::getenv("NN_CUDA_TF32");
  const bool tensor = be.precision() == Precision::BF16 ||
                      (be.name() == "cuda" && tf32 && std::strcmp(tf32, "1") == 0);
  out.cost = step_cost(shapes, rows, options_.optimizer.kind, tensor, target_nnz);
  out.shapes = shapes;
  out.target_nnz = target_nnz;
  out.tensor = tensor;
  // The sampled layer's forward product runs inside its loss range (SampledOutput::forward_loss).
  if (sampled_)
    for (PhaseCost& phase : out.cost.phases)
      if (phase.layer == sampled_->layer().name() && phase.phase == "forward") phase.phase = "loss";
  // A GPU needs larger operands than a CPU to reach its peaks.
  out.peaks = be.host_memory() ? measure_peaks(be, 1024, size_t(128) << 20)
                               : measure_peaks(be, 8192, size_t(1) << 30);
  out.basis = basis;
  return out;
}

}  // namespace nn
