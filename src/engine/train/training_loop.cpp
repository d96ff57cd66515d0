// Training loop implementation.
#include "train/training_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>
#include <utility>

#include "backend/math/loss_sums.h"
#include "core/error.h"
#include "core/format.h"
#include "core/memory_budget.h"
#include "core/profile_report.h"
#include "core/stop_request.h"
#include "data/block_order.h"
#include "distributed/device_placement.h"
#include "io/network_file.h"
#include "train/checkpoint_files.h"
#include "train/floor_report.h"
#include "train/least_squares.h"
#include "train/scaling_plan.h"
#include "train/step_cost.h"

namespace nn {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// "45 s", "3 min 20 s", "2 h 05 min": for ETAs.
std::string format_duration(double seconds) {
  const long s = std::lround(std::max(seconds, 0.0));
  char buf[48];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%ld s", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%ld min %02ld s", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld h %02ld min", s / 3600, (s % 3600) / 60);
  return buf;
}

std::string format_values(const ValidationResult& r) {
  std::string out;
  char buf[96];
  for (const auto& [name, value] : r.values) {
    std::snprintf(buf, sizeof buf, "%s%s %.4f", out.empty() ? "" : ", ", name.c_str(), value);
    out += buf;
  }
  return out;
}

std::vector<DenoiseSetting> denoise_settings(const Network& net, const BoundData& data) {
  std::vector<DenoiseSetting> out;
  const NetworkSpec& spec = net.spec();
  for (const auto& in : data.inputs) {
    const LayerSpec* l = spec.find_layer(in.layer);
    DenoiseSetting d;
    d.layer_index = static_cast<uint32_t>(l - spec.layers.data());
    if (in.dataset->is_sparse()) {
      // Network-wide Denoising applies to inputs marked Sparse in the JSON (as in DSSTNE);
      // pDropout on a sparse input layer means the same thing and takes precedence.
      if (spec.denoising_p > 0.0f && l->sparse) d.p = spec.denoising_p;
      if (l->p_dropout > 0.0f) d.p = l->p_dropout;
    }
    out.push_back(d);
  }
  return out;
}

// Batches between divergence checks when reading the loss sums costs a synchronisation (a GPU):
// a diverged run wastes at most this many batches.
constexpr uint64_t kDivergenceCheckBatches = 64;

DivergenceError diverged(double err, uint64_t epoch, uint64_t batch, uint64_t batches) {
  return DivergenceError(
      "training diverged: loss is " + std::string(std::isnan(err) ? "NaN" : "infinite") +
      " at epoch " + std::to_string(epoch) + ", batch " + std::to_string(batch) + " of " +
      std::to_string(batches) + "; try a smaller Alpha. The last checkpoint written is intact.");
}

}  // namespace

TrainingLoop::TrainingLoop(Network& net, const BoundData& data, TrainOptions options, LogSink log,
                           Communicator* comm)
    : net_(net),
      data_(data),
      options_(options),
      log_(log ? log : null_log()),
      comm_(comm ? comm : &local_comm_),
      optimizer_(net.backend(), options.optimizer),
      loader_(data, denoise_settings(net, data), options.seed),
      losses_(net, data),
      shuffle_rng_(mix64(options.seed ^ 0x5348554646ull)) {
  if (options_.minibatch == 0) throw ConfigError("minibatch must be positive");
  if (data_.outputs.empty()) throw ConfigError("training needs datasets bound to output layers");
  if (options_.least_squares) {
    if (comm_->size() > 1)
      throw ConfigError(
          "closed-form training (Solver LeastSquares) runs in one process; run "
          "nn-train without mpirun");
    check_least_squares(net_, data_, options_.optimizer.lambda1);
    options_.epochs = 1;
  }
  const uint32_t max_rows =
      static_cast<uint32_t>(std::min<uint64_t>(options_.minibatch, data_.examples));
  // A sampled output layer computes its columns in its own buffers: the layer has none.
  sampled_ = SampledOutput::create(net_, data_, options_.seed, comm_);
  if (sampled_) {
    losses_.skip_output(sampled_->output());
    for (Parameter* p : net_.parameters())
      if (sampled_->owns(p)) options_.reduction.excluded.push_back(p);
  }
  // Model-parallel layers compute every row of the global minibatch for their units.
  net_.set_max_batch(std::max<uint32_t>(1, max_rank_rows(max_rows, comm_->size())),
                     std::max<uint32_t>(1, max_rows), sampled_ ? &sampled_->layer() : nullptr);
  model_parallel_ = net_.model_parallel();
  for (Parameter* p : net_.parameters()) optimizer_.prepare(*p);
  // The same parameters, in the same order, as net_.parameters() (layers in declaration order).
  for (const LayerSpec& spec : net_.spec().layers) {
    Layer& layer = net_.layer(spec.name);
    UpdateGroup group{&layer, {}};
    for (Parameter* p : layer.parameters())
      if (!sampled_ || !sampled_->owns(p)) group.params.push_back(p);
    update_params_.insert(update_params_.end(), group.params.begin(), group.params.end());
    if (!group.params.empty()) update_groups_.push_back(std::move(group));
  }
  if (!options_.least_squares)
    row_sparse_ = RowSparseUpdates::create(
        net_, data_, optimizer_, options_.sparse_update,
        [this](const Parameter* p) { return sampled_ && sampled_->owns(p); }, row_sparse_notes_);
  // Data parallel, row-sparse gradients are summed as rows (RowSparseUpdates::reduce), not in
  // the buckets.
  if (row_sparse_)
    for (const Parameter* p : row_sparse_->parameters()) options_.reduction.excluded.push_back(p);
  // Split layers issue blocking collectives during backward; the communicator's contract keeps
  // those apart from asynchronous all-reduces, so with split layers the data-parallel gradients
  // are reduced after the backward pass.
  if (model_parallel_) options_.reduction.overlap = false;
  if (comm_->size() > 1) {
    // Gradients live in the backend's memory: with the CUDA backend they are reduced by NCCL
    // on the device (distributed/device_placement.h); host-side collectives stay on comm_.
    std::string why;
    backend_comm_ = make_backend_communicator(net_.backend(), *comm_, &why);
    placement_ = describe_placement(*comm_, net_.backend(), backend_comm_.get());
    if (!placement_.empty()) placement_.push_back("gradient communicator: " + why);
    reducer_ = std::make_unique<GradientReducer>(net_, backend_comm_ ? *backend_comm_ : *comm_,
                                                 options_.reduction);
  }
  for (const LayerSpec& l : net_.spec().layers) has_batch_norm_ |= l.batch_normalization;
}

void TrainingLoop::set_profiler(Profiler* profiler, ProfileOutputs outputs) {
  profiler_ = profiler;
  profile_outputs_ = std::move(outputs);
}

void TrainingLoop::set_stream(std::unique_ptr<ExampleStream> stream) {
  stream_ = std::move(stream);
}

void TrainingLoop::set_validation(const BoundData& data, std::vector<StreamSource> sources) {
  if (model_parallel_)
    throw ConfigError(
        "a validation set is not supported yet when layers are split over "
        "processes (model parallel); train without it, or set \"Parallel\": "
        "\"Data\" on the split layers");
  // A streamed training set holds no arrays to look at: the validation truth says whether the
  // outputs are single labels.
  const ExampleSet& truth = stream_ ? *data.outputs[0].dataset : *data_.outputs[0].dataset;
  // Segments of the training stream's window size (whole minibatches).
  const uint64_t segment = stream_ ? stream_->layout().window_examples() : 0;
  if (!sources.empty() && !stream_)
    throw ConfigError("a streamed validation set needs streamed training data");
  validator_ = std::make_unique<Validator>(net_, data, options_.validation_k, truth,
                                           options_.validation_rank_input_items, std::move(sources),
                                           segment);
}

void TrainingLoop::restore(const TrainingState& state, const std::string& path) {
  if (!state.present) return;
  // The position in an epoch counts minibatches: it means the same examples only with the same
  // minibatch size.
  if (state.batch > 0 && state.minibatch != options_.minibatch)
    throw ConfigError((path.empty() ? std::string("the checkpoint") : path) +
                      " was saved in the middle of epoch " + std::to_string(state.epoch + 1) +
                      " (after minibatch " + std::to_string(state.batch) +
                      ") with minibatches of " + std::to_string(state.minibatch) +
                      " examples; resume it with the same " + "minibatch size (-b " +
                      std::to_string(state.minibatch) + ", CDL MiniBatch), not " +
                      std::to_string(options_.minibatch));
  epoch_ = state.epoch;
  step_ = state.step;
  shuffle_rng_.set_state(state.rng_state);
  epoch_rng_state_ = state.rng_state;
  batch_ = state.batch;
  epoch_loss_ = state.epoch_loss;
  state_file_ = path;
}

std::string TrainingLoop::checkpoint_path(uint64_t epoch) const {
  return checkpoint_file_name(options_.checkpoint_name, epoch);
}

// Deletes the checkpoint that has just fallen out of the newest `checkpoints_kept` (written
// `checkpoints_kept` intervals before this epoch's; also under its old name), and the
// checkpoints of stopped runs that this epoch's supersedes. A missing file is not an error.
void TrainingLoop::remove_old_checkpoint() {
  std::error_code ec;
  for (const CheckpointFile& f : list_checkpoints(options_.checkpoint_name))
    if (f.batch > 0 && f.epoch < epoch_ && std::filesystem::remove(f.path, ec))
      log_("checkpoint: removed " + f.path + " (a stopped run's, superseded)");
  if (options_.checkpoints_kept <= 0) return;
  const uint64_t span =
      uint64_t(options_.checkpoints_kept) * uint64_t(options_.checkpoint_interval);
  if (epoch_ <= span) return;
  const std::string old = checkpoint_path(epoch_ - span);
  if (std::filesystem::remove(old, ec))
    log_("checkpoint: removed " + old + " (keeping the newest " +
         std::to_string(options_.checkpoints_kept) + ")");
  std::filesystem::remove(options_.checkpoint_name + ".nc" + std::to_string(epoch_ - span) + ".nc",
                          ec);
}

int TrainingLoop::agreed_stop_signal() {
  int signal = stop_signal();
  if (comm_->size() > 1) comm_->all_reduce_max(&signal, 1);
  return signal;
}

void TrainingLoop::stop(int signal) {
  stopped_signal_ = signal;
  const uint64_t batches = (data_.examples + options_.minibatch - 1) / options_.minibatch;
  const std::string update = " (update " + std::to_string(step_) + ")";
  stop_position_ = batch_ > 0
                       ? "in epoch " + std::to_string(epoch_ + 1) + " after minibatch " +
                             std::to_string(batch_) + " of " + std::to_string(batches) + update
                   : step_ > 0 ? "after epoch " + std::to_string(epoch_) + update
                               : std::string("before training started");
  if (!state_file_.empty()) {  // nothing happened since that file was written or read
    stop_checkpoint_ = state_file_;
    return;
  }
  const std::string& name =
      options_.checkpoint_name.empty() ? options_.stop_checkpoint_name : options_.checkpoint_name;
  if (name.empty() || step_ == 0) return;
  const NetworkFile file = snapshot_view();  // collective with model-parallel layers
  const std::string path = checkpoint_file_name(name, epoch_, batch_);
  if (comm_->rank() == 0) {
    write_network_file(path, file);
    log_("checkpoint: " + path);
  }
  // mpirun ends the whole job when the first rank exits: nobody leaves before the file is whole.
  if (comm_->size() > 1) comm_->barrier();
  if (on_checkpoint) on_checkpoint(path);
  stop_checkpoint_ = path;
}

NetworkFile TrainingLoop::snapshot() const {
  return snapshot_of(/*borrow=*/false);
}

NetworkFile TrainingLoop::snapshot_view() const {
  return snapshot_of(/*borrow=*/true);
}

NetworkFile TrainingLoop::snapshot_of(bool borrow) const {
  // (Logically const: the weights' values are the same in either layout.)
  if (sampled_) sampled_->restore_weights();
  NetworkFile f = borrow ? net_.to_file_view() : net_.to_file();
  TrainingState& t = f.training;
  t.present = true;
  t.epoch = epoch_;
  t.step = step_;
  // Mid-epoch (stopped), the generator as it was before this epoch's shuffle: a resumed run
  // draws the same order and skips the minibatches done.
  t.rng_state = batch_ > 0 ? epoch_rng_state_ : shuffle_rng_.state();
  t.batch = batch_;
  t.epoch_loss = batch_ > 0 ? epoch_loss_ : 0.0;
  t.seed = options_.seed;
  t.optimizer = options_.optimizer.kind;
  t.alpha = optimizer_.learning_rate(epoch_, step_);
  t.lambda = options_.optimizer.lambda;
  t.lambda1 = options_.optimizer.lambda1;
  t.mu = options_.optimizer.mu;
  t.mu1 = options_.optimizer.mu1;
  t.minibatch = options_.minibatch;
  f.checkpoint_name = options_.checkpoint_name;
  f.checkpoint_interval = options_.checkpoint_interval;
  return f;
}

std::vector<EpochReport> TrainingLoop::run() {
  std::vector<EpochReport> reports;
  try {
    reports = run_epochs();
  } catch (...) {
    // Whatever ended the run (a stop thrown by a callback, divergence), the network's weights
    // are where its readers expect them.
    forget_bf16_copies();
    try {
      sync_weights();
    } catch (...) {
    }
    throw;
  }
  forget_bf16_copies();
  sync_weights();
  if (graph_steps_ > 0) {
    log_(format("%llu of %llu steps ran as CUDA graphs", (unsigned long long)graph_steps_,
                (unsigned long long)steps_run_));
    for (const std::string& line : net_.backend().path_notes())
      if (line.rfind("CUDA graphs: ", 0) == 0) log_(line);
  }
  if (profiler_) report_profile();
  return reports;
}

void TrainingLoop::preload_batch(const HostBatch& hb, unsigned set) {
  if (model_parallel_) return;
  Backend& be = net_.backend();
  ProfileRange range(profiler_, ProfilePhase::Data, "upload inputs");
  be.begin_side_uploads(set_marks_[set]);
  try {
    load_inputs(net_, data_, hb, set);
    // (A batch without rows runs no loss, which would leave its targets unused.)
    if (hb.rows > 0) losses_.load_targets(hb, set);
  } catch (...) {
    be.end_side_uploads();
    throw;
  }
  be.end_side_uploads();
  inputs_preloaded_ = true;
}

bool TrainingLoop::begin_step_graph(uint32_t rows) {
  if (graph_off_.empty()) {
    if (profiler_)
      graph_off_ = "--profile and --trace time every range with events on the stream";
    else if (comm_->size() > 1)
      graph_off_ = "with several ranks, losses and gradients are reduced inside the step";
  }
  if (!graph_off_.empty() ||
      std::find(graph_warm_rows_.begin(), graph_warm_rows_.end(), rows) == graph_warm_rows_.end())
    return false;
  graph_off_ = net_.backend().begin_step_graph();
  return graph_off_.empty();
}

void TrainingLoop::sync_weights() {
  if (sampled_) sampled_->restore_weights();
}

void TrainingLoop::forget_bf16_copies() {
  for (Parameter* p : net_.parameters()) p->bf16_written = false;
}

std::vector<EpochReport> TrainingLoop::run_epochs() {
  std::vector<EpochReport> reports;
  stopped_signal_ = 0;
  stop_checkpoint_.clear();
  stop_position_.clear();
  // Split layers' parameters are counted over every rank (each holds its slice).
  uint64_t parameters = 0, split_parameters = 0;
  for (Parameter* p : net_.parameters())
    (p->sharded ? split_parameters : parameters) += p->logical_size();
  if (model_parallel_) comm_->all_reduce_sum(&split_parameters, 1);
  log_("training: " + std::to_string(data_.examples) + " examples, minibatch " +
       std::to_string(options_.minibatch) + ", " + std::to_string(parameters + split_parameters) +
       " parameters, " +
       (options_.least_squares ? format("closed-form least squares (no optimizer steps) lambda=%g",
                                        double(options_.optimizer.lambda))
                               : describe(options_.optimizer)) +
       ", backend " + net_.backend().name());
  for (const std::string& line : placement_) log_(line);
  for (const std::string& line : row_sparse_notes_) log_(line);
  for (const std::string& line : net_.padding_notes()) log_(line);
  if (sampled_) log_(sampled_->describe());
  if (reducer_ && reducer_->buckets() > 0)
    log_(
        format("data parallel: %d ranks (%s), each takes its slice of every minibatch of %u; "
               "gradients %.1f MB per step in %zu buckets, %s the backward pass",
               comm_->size(), (backend_comm_ ? backend_comm_.get() : comm_)->name().c_str(),
               options_.minibatch, double(reducer_->bytes_per_step()) / 1e6, reducer_->buckets(),
               reducer_->overlapping() ? "reduced during" : "reduced after"));
  if (model_parallel_)
    log_(
        format("model parallel: %d ranks; every rank reads every example of each minibatch and "
               "computes its slice of the split layers for all of them",
               comm_->size()));
  if (stream_)
    log_("streaming: " + stream_->describe() + "; block shuffle (docs/large-datasets.md)");
  if (batch_ > 0)
    log_("resuming in epoch " + std::to_string(epoch_ + 1) + " after minibatch " +
         std::to_string(batch_) + " (" + std::to_string(step_) + " updates done)");
  else if (epoch_ > 0)
    log_("resuming after epoch " + std::to_string(epoch_) + " (" + std::to_string(step_) +
         " updates done)");
  if (validator_)
    log_("validation: " + validator_->metric() + " every " +
         std::to_string(std::max<uint32_t>(options_.validation_interval, 1)) + " epoch(s)" +
         (options_.patience ? ", early stopping after " + std::to_string(options_.patience) +
                                  " evaluations without improvement"
                            : std::string()) +
         (options_.keep_best ? ", the best network is kept" : "") +
         (validator_->ranking_rule().empty() ? "" : "; " + validator_->ranking_rule()));
  report_error_ = 0;
  report_examples_ = 0;
  report_time_ = Clock::now();
  while (epoch_ < options_.epochs) {
    if (options_.max_steps > 0 && step_ >= options_.max_steps) return reports;
    if (const int signal = agreed_stop_signal()) {
      stop(signal);
      return reports;
    }
    EpochReport report;
    if (options_.least_squares)
      solve_epoch(report);
    else if (!run_epoch(report))
      return reports;  // stopped mid-epoch
    reports.push_back(report);
    if (reducer_ && reducer_->buckets() > 0)
      log_(
          format("data parallel: %.2f s of epoch %.0f waiting for gradient all-reduce after "
                 "backward (%s)",
                 reducer_->wait_seconds() - reduce_wait_reported_, double(epoch_),
                 reducer_->overlapping() ? "overlapped" : "not overlapped"));
    if (reducer_) reduce_wait_reported_ = reducer_->wait_seconds();
    const bool go_on = validate(reports.back());
    if (on_epoch && comm_->rank() == 0) {
      forget_bf16_copies();  // the callback may change the weights
      on_epoch(reports.back());
    }
    if (!options_.checkpoint_name.empty() && options_.checkpoint_interval > 0 &&
        epoch_ % uint64_t(options_.checkpoint_interval) == 0) {
      // Every rank takes part (model-parallel slices are gathered); rank 0 writes.
      const NetworkFile file = snapshot_view();
      if (comm_->rank() == 0) {
        const std::string path = checkpoint_path(epoch_);
        write_network_file(path, file);
        log_("checkpoint: " + path);
        remove_old_checkpoint();
      }
      state_file_ = checkpoint_path(epoch_);
      // On every rank (the others learn the name rank 0 writes), so that any of them can name
      // it when the job ends for a lost rank.
      if (on_checkpoint) on_checkpoint(state_file_);
    }
    if (!go_on) break;
  }
  if (validator_ && options_.keep_best && have_best_ && best_epoch_ != epoch_) {
    sync_weights();  // the arrays loaded are in the network's layout
    forget_bf16_copies();
    net_.load_arrays(best_file_);
    restored_epoch_ = best_epoch_;
    log_("kept the network of epoch " + std::to_string(best_epoch_) + " (best " + best_.metric +
         format(" %.4f", best_.value) + ")");
  }
  return reports;
}

bool TrainingLoop::validate(EpochReport& report) {
  if (!validator_) return true;
  const uint32_t interval = std::max<uint32_t>(options_.validation_interval, 1);
  if (epoch_ % interval != 0 && epoch_ < options_.epochs) return true;
  sync_weights();
  report.validation = validator_->evaluate();
  report.validated = true;
  const ValidationResult& r = report.validation;
  const bool better = !have_best_ || best_.improved_by(r);
  if (better) {
    have_best_ = true;
    best_ = r;
    best_epoch_ = epoch_;
    evaluations_since_best_ = 0;
    if (options_.keep_best) best_file_ = net_.to_file();
  } else {
    ++evaluations_since_best_;
  }
  log_("validation after epoch " + std::to_string(epoch_) + " (" + std::to_string(r.examples) +
       " examples): " + format_values(r) +
       (better ? " (best so far)"
               : format(" (best %.4f after epoch %.0f)", best_.value, double(best_epoch_))));
  if (options_.patience > 0 && evaluations_since_best_ >= options_.patience &&
      epoch_ < options_.epochs) {
    stop_reason_ = "early stopping after epoch " + std::to_string(epoch_) + ": " + r.metric +
                   " did not improve in " + std::to_string(evaluations_since_best_) +
                   " evaluations (best " + format("%.4f", best_.value) + " after epoch " +
                   std::to_string(best_epoch_) + ")";
    log_(stop_reason_);
    return false;
  }
  return true;
}

bool TrainingLoop::run_epoch(EpochReport& r) {
  const auto start = Clock::now();
  const uint64_t n = data_.examples;
  epoch_rng_state_ = shuffle_rng_.state();
  std::vector<uint32_t> order;  // in memory: the epoch's order (streaming: the reader's)
  if (!stream_) {
    order.resize(n);
    std::iota(order.begin(), order.end(), 0u);
    if (options_.shuffle) shuffle_in_place(order.data(), n, shuffle_rng_);
  }

  const uint32_t batch = options_.minibatch;
  const uint64_t batches = (n + batch - 1) / batch;
  // Resumed from a run stopped mid-epoch: the minibatches it had done.
  const uint64_t first = batch_;
  if (first >= batches)
    throw ConfigError("the checkpoint was saved after minibatch " + std::to_string(first) +
                      " of epoch " + std::to_string(epoch_ + 1) + ", which now has only " +
                      std::to_string(batches) + " minibatches; was the training data changed?");
  const float alpha_epoch = optimizer_.learning_rate(epoch_, step_ - first);
  if (row_sparse_) row_sparse_->begin(step_);  // every row is current here
  if (stream_)
    stream_->begin(shuffle_rng_, options_.shuffle, first, loader_, comm_->rank(), comm_->size(),
                   model_parallel_);
  // Alone, the batches' errors are summed in the backend's memory (loss_sums_) and read back
  // only to report and to check for divergence: after every batch when that costs nothing (host
  // memory), else every kDivergenceCheckBatches batches, at progress lines and at the end of the
  // epoch (the first bad batch is remembered on the device, so the message still names it).
  // With several ranks each batch's error is all-reduced on the host, so it is read every batch.
  const bool per_batch = comm_->size() > 1;
  const bool check_every_batch = net_.backend().host_memory();
  // Whatever ran since the last step (validation, a checkpoint) may have read either buffer
  // set of the inputs: the first two steps' uploads wait for it.
  set_marks_[0] = set_marks_[1] = net_.backend().stream_mark();
  inputs_preloaded_ = false;
  clear_loss_sums(epoch_loss_);
  double total = epoch_loss_;  // several ranks: the all-reduced errors so far
  report_base_ = epoch_loss_;
  auto last_progress = start;

  // Every rank holds the same order; each assembles only its slice of global batch b (with
  // model-parallel layers, the whole batch, and its slice cut from it).
  auto global_rows = [&](uint64_t b) {
    return static_cast<uint32_t>(std::min<uint64_t>(batch, n - b * batch));
  };
  using Batches = std::pair<HostBatch, HostBatch>;  // this rank's rows, the whole batch
  auto assemble = [&](uint64_t b, uint64_t step) {
    const auto assembly_start = profiler_ ? Clock::now() : Clock::time_point();
    Batches hb;
    const RowSlice slice = rank_rows(global_rows(b), comm_->rank(), comm_->size());
    if (stream_ && model_parallel_) {
      hb.second = stream_->assemble(b, step);
      hb.first = slice_rows(hb.second, slice.first, slice.count);
    } else if (stream_) {
      hb.first = stream_->assemble(b, step);
    } else if (model_parallel_) {
      loader_.assemble(order.data() + b * batch, global_rows(b), step, true, hb.second);
      hb.first = slice_rows(hb.second, slice.first, slice.count);
    } else {
      loader_.assemble(order.data() + b * batch + slice.first, slice.count, step, true, hb.first);
    }
    if (row_sparse_) row_sparse_->index(hb.first, model_parallel_ ? &hb.second : nullptr);
    if (profiler_) profiler_->add_loader_seconds(seconds_since(assembly_start));
    return hb;
  };
  // Double buffering: batch b+1 is assembled (on the prefetcher's thread) while batch b trains.
  // Its job refers to this function's locals: however the epoch ends (a stop, a throw), it has
  // finished before they go.
  struct WaitForPrefetch {
    const Prefetcher<Batches>& prefetcher;
    ~WaitForPrefetch() { prefetcher.wait(); }
  } wait_for_prefetch{prefetcher_};
  prefetcher_.start([&assemble, first, step = step_ + 1] { return assemble(first, step); });
  for (uint64_t b = first; b < batches; ++b) {
    // The step's range: from waiting for its batch to the stop check after it.
    ProfileStep profile_step(profiler_, step_ + 1, epoch_ + 1);
    Batches current;
    {
      ProfileRange range(profiler_, ProfilePhase::Data, "wait for batch");
      current = prefetcher_.take();
    }
    if (row_sparse_ && comm_->size() > 1) {
      // The ranks' rows of the minibatch, agreed (a collective: every rank takes every batch).
      ProfileRange range(profiler_, ProfilePhase::Communication, "row-sparse rows agreed");
      row_sparse_->agree(*comm_, current.first);
    }
    if (b + 1 < batches)
      prefetcher_.start([&assemble, b, step = step_ + 2] { return assemble(b + 1, step); });
    const float alpha = optimizer_.learning_rate(epoch_, step_);
    const uint32_t rows = global_rows(b);
    const auto set = static_cast<unsigned>((step_ + 1) % 2);
    preload_batch(current.first, set);
    // The step and its loss fold, recorded as a graph where the backend can (launched by
    // end_step_graph, dropped if the step throws).
    struct StepGraph {
      Backend& backend;
      bool recording;
      ~StepGraph() {
        if (recording) backend.abandon_step_graph();
      }
    } graph{net_.backend(), begin_step_graph(current.first.rows)};
    const double err = train_batch(current.first, model_parallel_ ? &current.second : nullptr,
                                   alpha, rank_rows(rows, comm_->rank(), comm_->size()), rows);
    if (per_batch) {
      if (!std::isfinite(err)) throw diverged(err, epoch_ + 1, b + 1, batches);
      total += err;
    } else {
      net_.backend().fold_loss_sums(loss_sums_.data(), b + 1);
    }
    ++steps_run_;
    if (graph.recording) {
      net_.backend().end_step_graph();
      graph.recording = false;
      ++graph_steps_;
    } else if (graph_off_.empty() && std::find(graph_warm_rows_.begin(), graph_warm_rows_.end(),
                                               current.first.rows) == graph_warm_rows_.end()) {
      graph_warm_rows_.push_back(current.first.rows);
    }
    // The next step but one may overwrite this step's buffer set once the work so far is done.
    if (!model_parallel_) set_marks_[set] = net_.backend().stream_mark();
    if (!per_batch && (check_every_batch || (b + 1) % kDivergenceCheckBatches == 0))
      read_loss_sums(batches);
    report_examples_ += rows;
    if (options_.minibatch_report_interval > 0 && step_ % options_.minibatch_report_interval == 0) {
      if (!per_batch) total = read_loss_sums(batches)[math::kLossTotal];
      report_minibatch(total, alpha);
    }
    if (options_.progress_seconds > 0 &&
        std::chrono::duration<double>(Clock::now() - last_progress).count() >=
            options_.progress_seconds) {
      last_progress = Clock::now();
      if (!per_batch) total = read_loss_sums(batches)[math::kLossTotal];
      const double done = double(std::min<uint64_t>(n, (b + 1) * batch));
      const double elapsed = seconds_since(start);
      const double rate = done / std::max(elapsed, 1e-9);
      log_(
          format("epoch %.0f: batch %.0f/%.0f (%.0f%%), loss so far %.6f, %.0f examples/s, %.1f s, "
                 "epoch ETA ",
                 double(epoch_ + 1), double(b + 1), double(batches),
                 100.0 * double(b + 1) / double(batches), total / done, rate, elapsed) +
          format_duration((double(n) - done) / std::max(rate, 1e-9)));
    }
    // The step limit ends the epoch here without saving (a later run() goes on from here).
    if (options_.max_steps > 0 && step_ >= options_.max_steps && b + 1 < batches) {
      if (row_sparse_) row_sparse_->flush(step_);
      if (stream_) {
        prefetcher_.wait();
        stream_->end();
      }
      batch_ = b + 1;
      epoch_loss_ = per_batch ? total : read_loss_sums(batches)[math::kLossTotal];
      if (profiler_) profiler_->end_epoch(seconds_since(start));
      return false;
    }
    // A stop request ends the epoch here; after its last minibatch, the epoch ends as usual
    // and run() stops before the next one.
    if (b + 1 < batches) {
      int signal = 0;
      {
        // With several ranks the stop check is a collective: it waits for the slowest rank.
        ProfileRange range(comm_->size() > 1 ? profiler_ : nullptr, ProfilePhase::Communication,
                           "stop-request agreement");
        signal = agreed_stop_signal();
      }
      if (signal) {
        if (row_sparse_) row_sparse_->flush(step_);  // the checkpoint holds every row current
        if (stream_) {
          prefetcher_.wait();  // the batch being assembled, before the reader stops
          stream_->end();
        }
        batch_ = b + 1;
        epoch_loss_ = per_batch ? total : read_loss_sums(batches)[math::kLossTotal];
        if (profiler_) profiler_->end_epoch(seconds_since(start));
        stop(signal);
        return false;
      }
    }
  }
  if (!per_batch) total = read_loss_sums(batches)[math::kLossTotal];
  report_error_ += total - report_base_;  // the next epoch's sums start from 0
  // Validation, checkpoints and the saved network read every row. (Outside the steps, so not a
  // profiler range: the profile accounts for steps only.)
  if (row_sparse_) row_sparse_->flush(step_);
  if (stream_) {
    shuffle_rng_ = stream_->end();  // past every window's shuffle
    log_stream_epoch(seconds_since(start));
  }
  ++epoch_;
  batch_ = 0;
  epoch_loss_ = 0.0;
  r.epoch = epoch_;
  r.data_loss = total / double(n);
  r.reg_loss = regularization_loss();
  r.loss = r.data_loss + r.reg_loss;
  r.seconds = seconds_since(start);
  // (A resumed epoch ran only the minibatches after `first`.)
  r.examples_per_second =
      double(n - std::min<uint64_t>(n, first * batch)) / std::max(r.seconds, 1e-9);
  // Outside the steps: the profiler may wait for the device here.
  if (profiler_) profiler_->end_epoch(r.seconds);
  r.alpha = alpha_epoch;
  epoch_seconds_sum_ += r.seconds;
  ++epochs_timed_;
  const double remaining =
      epoch_seconds_sum_ / double(epochs_timed_) * double(options_.epochs - epoch_);
  log_(format(
           "epoch %.0f/%.0f: loss %.6f (data %.6f + regularisation %.6f), %.0f examples/s, %.2f s",
           double(r.epoch), double(options_.epochs), r.loss, r.data_loss, r.reg_loss,
           r.examples_per_second, r.seconds) +
       (epoch_ < options_.epochs ? ", ETA " + format_duration(remaining) : std::string()));
  return true;
}

void TrainingLoop::solve_epoch(EpochReport& r) {
  if (stream_)
    throw ConfigError(
        "closed-form training (Solver LeastSquares) needs the datasets in memory (give "
        "--no-stream)");
  // No steps follow: the gradients' memory (as large as the weights) goes to the solve.
  for (Parameter* p : net_.parameters()) p->grad.reset();
  const LeastSquaresReport s =
      solve_least_squares(net_, data_, options_.optimizer.lambda, net_.spec().denoising_p,
                          options_.least_squares_bias, options_.least_squares_zero_diagonal);
  ++epoch_;
  ++step_;
  state_file_.clear();
  r.epoch = epoch_;
  r.loss = s.loss;
  r.reg_loss = s.reg_loss;
  r.data_loss = s.loss - s.reg_loss;
  r.seconds = s.seconds;
  r.examples_per_second = double(s.examples) / std::max(s.seconds, 1e-9);
  log_(format(
      "solved in closed form: %.0f examples, %.0f inputs%s -> %.0f outputs%s, "
      "denoising p %g, ridge N*lambda %g (the loss below is the expected one over the "
      "denoising masks)",
      double(s.examples), double(s.inputs),
      options_.least_squares_bias ? " + bias" : " (biases held at 0)", double(s.outputs),
      s.targets_are_inputs
          ? (options_.least_squares_zero_diagonal ? " (the targets are the inputs; zero diagonal)"
                                                  : " (the targets are the inputs)")
          : "",
      double(net_.spec().denoising_p), s.ridge));
  // The line every epoch logs, for whatever reads the log.
  log_(format(
      "epoch %.0f/%.0f: loss %.6f (data %.6f + regularisation %.6f), %.0f examples/s, %.2f s",
      double(r.epoch), double(options_.epochs), r.loss, r.data_loss, r.reg_loss,
      r.examples_per_second, r.seconds));
}

double TrainingLoop::train_batch(const HostBatch& hb, const HostBatch* whole, float alpha,
                                 RowSlice slice, uint32_t global_rows) {
  Backend& be = net_.backend();
  ++step_;
  state_file_.clear();
  if (on_step) on_step(step_);
  LayerContext ctx{be, hb.rows, true, options_.seed, step_, slice.first, comm_, global_rows};
  // Nothing reads the output layers' activations between the forward pass and the loss here,
  // so the loss applies them (one pass over each wide output layer instead of two on a GPU).
  ctx.defer_output_activation = true;
  ctx.profiler = profiler_;
  // A rank can get no rows of a short last batch. It still joins the reductions; with batch
  // normalisation or model-parallel layers it runs the (empty) passes too, whose collectives
  // run layer by layer.
  const bool run_passes = hb.rows > 0 || has_batch_norm_ || model_parallel_;
  const bool preloaded = std::exchange(inputs_preloaded_, false);
  if (run_passes) {
    if (!preloaded) {
      ProfileRange range(profiler_, ProfilePhase::Data, "upload inputs");
      load_inputs(net_, data_, hb);
      if (whole) load_full_inputs(net_, data_, *whole);
    }
    if (row_sparse_) {
      ProfileRange range(profiler_, ProfilePhase::Update, "row-sparse catch-up");
      row_sparse_->before_forward(hb, whole, step_);
    }
    net_.forward(ctx, sampled_ ? &sampled_->layer() : nullptr);
    losses_.accumulate(hb, /*write_deltas=*/true, whole, loss_sums_.data() + math::kLossBatch,
                       /*activations_deferred=*/true, profiler_);
    // The penalty terms (sparseness penalties, a Variational layer's KL term; 0 when there are
    // none) are part of the objective that backward() differentiates, so they are reported with
    // the data error.
    if (hb.rows > 0) {
      ProfileRange range(profiler_, ProfilePhase::Loss, "penalties");
      net_.accumulate_penalties(ctx, loss_sums_.data() + math::kLossPenalty);
    }
  } else if (row_sparse_) {
    // No rows here, but the minibatch's rows are updated on every rank: they catch up here too
    // (the input's view of them is the empty slice's, indexed over the whole minibatch).
    if (!preloaded) load_inputs(net_, data_, hb);
    row_sparse_->before_forward(hb, whole, step_);
  }
  // Collective with several ranks: every rank takes part, with or without rows.
  if (sampled_) {
    ProfileRange range(profiler_, ProfilePhase::Loss, sampled_->layer().name());
    sampled_->forward_loss(ctx, hb, whole, loss_sums_.data() + math::kLossBatch);
  }
  double err = 0.0;
  if (comm_->size() > 1) {
    ProfileRange range(profiler_, ProfilePhase::Communication, "loss all-reduce");
    // Losses are sums over examples: the global batch's loss is the sum over ranks. The
    // communicator reduces host values, so this batch's sums are read now (the fold then only
    // clears them; its total is not used).
    const std::vector<double> s = loss_sums_.to_host();
    err = s[math::kLossBatch] + s[math::kLossPenalty];
    be.fold_loss_sums(loss_sums_.data(), step_);
    comm_->all_reduce_sum(&err, 1);
    if (!std::isfinite(err)) return err;
  }
  // A sampled output layer runs its own backward pass (train/sampled_output.h).
  std::function<bool(Layer&)> instead;
  if (sampled_)
    instead = [this, &ctx](Layer& l) {
      if (&l != &sampled_->layer()) return false;
      sampled_->backward(ctx);
      return true;
    };
  if (reducer_) {
    // Local gradients are means over this rank's rows; weighting them by rows / global rows
    // before summing gives the global batch mean exactly, however the rows were split.
    reducer_->begin(float(double(hb.rows) / double(global_rows)));
    // A rank without rows contributes zeros (weight 0). With batch normalisation it still runs
    // the backward pass, hook included, so its collectives come in the same order as everyone's.
    if (run_passes)
      net_.backward(
          ctx,
          [this](Layer& l) {
            ProfileRange range(profiler_, ProfilePhase::Communication, "gradient buckets started");
            reducer_->layer_done(l);
          },
          instead);
    ProfileRange range(profiler_, ProfilePhase::Communication, "gradient all-reduce wait");
    reducer_->finish();
    if (row_sparse_) {
      ProfileRange rows(profiler_, ProfilePhase::Communication, "row-sparse gradient all-reduce");
      row_sparse_->reduce(*comm_, float(double(hb.rows) / double(global_rows)), hb);
    }
  } else {
    net_.backward(ctx, nullptr, instead);
  }
  if (profiler_) {
    // Layer by layer, so that the profile times each layer's update.
    for (const UpdateGroup& group : update_groups_) {
      ProfileRange range(profiler_, ProfilePhase::Update, group.layer->name());
      for (Parameter* p : group.params) optimizer_.update(*p, step_, alpha);
    }
  } else {
    optimizer_.update_all(update_params_, step_, alpha);  // one launch on a GPU
  }
  if (sampled_) {
    ProfileRange range(profiler_, ProfilePhase::Update, sampled_->layer().name());
    sampled_->update(optimizer_, step_, alpha);
  }
  return err;
}

double TrainingLoop::regularization_loss() {
  const auto& o = options_.optimizer;
  if (o.lambda == 0.0f && o.lambda1 == 0.0f) return 0.0;
  // Summed in the backend's memory and read back once: [0] unsplit parameters, [1] model-parallel
  // slices (they add up over the ranks).
  Backend& be = net_.backend();
  reg_sums_.assign(be, std::vector<double>(2, 0.0));
  for (Parameter* p : net_.parameters()) {
    if (!p->regularize) continue;
    double* into = reg_sums_.data() + (p->sharded ? 1 : 0);
    if (o.lambda != 0.0f)
      be.sum_squares_accumulate(p->value.data(), p->size(), 0.5 * o.lambda, into);
    if (o.lambda1 != 0.0f) be.sum_abs_accumulate(p->value.data(), p->size(), o.lambda1, into);
  }
  const std::vector<double> sums = reg_sums_.to_host();
  double r = sums[0], sharded = sums[1];
  if (model_parallel_) comm_->all_reduce_sum(&sharded, 1);
  return r + sharded;
}

void TrainingLoop::log_stream_epoch(double epoch_seconds) {
  const StreamStats& s = stream_->stats();
  log_(
      format("streaming: epoch %.0f read %.0f examples in %.0f window(s), %s in %.0f ranges, "
             "in %.2f s on the reader thread (%.0f%% of the epoch); minibatches waited %.2f s "
             "for it",
             double(epoch_ + 1), double(s.read.examples), double(s.windows),
             format_bytes(s.read.bytes).c_str(), double(s.read.ranges), s.read_seconds,
             100.0 * s.read_seconds / std::max(epoch_seconds, 1e-9), s.wait_seconds));
}

void TrainingLoop::report_minibatch(double epoch_total, float alpha) {
  report_error_ += epoch_total - report_base_;
  report_base_ = epoch_total;
  MinibatchReport m;
  m.step = step_;
  m.epoch = epoch_ + 1;
  m.examples = report_examples_;
  m.loss = report_error_ / double(std::max<uint64_t>(report_examples_, 1));
  m.examples_per_second = double(report_examples_) / std::max(seconds_since(report_time_), 1e-9);
  m.alpha = alpha;
  report_error_ = 0;
  report_examples_ = 0;
  report_time_ = Clock::now();
  if (on_minibatch && comm_->rank() == 0) on_minibatch(m);
}

void TrainingLoop::clear_loss_sums(double total) {
  std::vector<double> sums(math::kLossSumCount, 0.0);
  sums[math::kLossTotal] = total;
  loss_sums_.assign(net_.backend(), sums);
}

std::vector<double> TrainingLoop::read_loss_sums(uint64_t batches) {
  std::vector<double> s = loss_sums_.to_host();
  if (s[math::kLossFirstBad] != 0.0)
    throw diverged(s[math::kLossBadValue], epoch_ + 1, uint64_t(s[math::kLossFirstBad]), batches);
  return s;
}

}  // namespace nn
