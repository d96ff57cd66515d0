// The training loop: epochs of shuffled minibatches (the next batch is assembled on another
// thread while the current one trains), loss and output deltas per output layer, backward pass,
// optimizer updates, per-epoch reports, atomic checkpoints, and exact resumption from one.
// With a communicator of several ranks the loop is data parallel: every rank draws the same
// shuffle, takes its slice of each global minibatch (rank_rows), and the gradients and losses
// are summed across ranks weighted by rows; only rank 0 writes checkpoints.
// A stop request (core/stop_request.h, a signal) is looked at after every minibatch (the ranks
// agree on it through a reduction): the loop ends there and saves a checkpoint of that exact
// state, mid-epoch included (the position in the epoch's shuffle is part of it), so a run resumed
// from it computes what the uninterrupted run would have.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/device_array.h"
#include "core/log.h"
#include "core/profiler.h"
#include "core/random.h"
#include "distributed/communicator.h"
#include "model/batch_loader.h"
#include "model/network.h"
#include "train/data_parallel.h"
#include "train/example_stream.h"
#include "train/optimizer.h"
#include "train/prefetcher.h"
#include "train/row_sparse.h"
#include "train/sampled_output.h"
#include "train/scaling_plan.h"
#include "train/step.h"
#include "train/step_cost.h"
#include "train/validation.h"

namespace nn {

struct TrainOptions {
  uint32_t epochs = 1;  // total epochs (a resumed run continues up to this)
  // run() returns once this many updates are done, mid-epoch or not, saving nothing (0: no
  // limit): the short profiled runs of `nn-train --plan`. A later run() goes on from there.
  uint64_t max_steps = 0;
  uint32_t minibatch = 1024;
  OptimizerSettings optimizer;
  bool shuffle = true;
  uint64_t seed = 1;
  std::string checkpoint_name;  // "" => no checkpoints
  int checkpoint_interval = 0;  // epochs between checkpoints
  // Where a stopped run saves its state when checkpoint_name is "" ("" too: it saves nothing).
  std::string stop_checkpoint_name;
  // Newest checkpoints kept on disk: writing one deletes the one `checkpoints_kept` intervals
  // older (a 40 MB network every epoch adds up). 0 keeps all.
  int checkpoints_kept = 0;
  double progress_seconds = 10;  // in-epoch progress lines when an epoch runs longer than this
  // Updates between minibatch reports (on_minibatch: at every step that is a multiple of it);
  // 0: none.
  uint32_t minibatch_report_interval = 0;
  // Data parallelism (a communicator with several ranks): gradient buckets and whether their
  // all-reduce overlaps the backward pass (train/data_parallel.h).
  GradientReducerOptions reduction;
  // Validation set (see set_validation): evaluated after every `validation_interval` epochs and
  // after the last one; `patience` evaluations without improvement stop training early (0 =
  // never); `keep_best` puts the best evaluated weights back into the network at the end.
  uint32_t validation_interval = 1;
  uint32_t validation_k = 10;
  bool validation_rank_input_items = false;  // rank each example's input items too
  uint32_t patience = 0;
  bool keep_best = true;
  // Closed-form training (train/least_squares.h) instead of minibatch steps: one "epoch" that
  // solves the network's weights exactly (epochs are then 1).
  bool least_squares = false;
  bool least_squares_bias = true;            // and the biases with them (false: held at 0)
  bool least_squares_zero_diagonal = false;  // no item predicts itself (EASE, EDLAE)
  // How sparse input layers' matrices are updated (train/row_sparse.h).
  SparseUpdateMode sparse_update = SparseUpdateMode::Exact;
};

// What run() does at its end with the results of a profiler (set_profiler), on rank 0 only: the
// table to the log (core/profile_report.h) and the Chrome trace to a file ("" for none).
struct ProfileOutputs {
  bool table = true;
  std::string trace_path;
};

// The least time one training step of a run needs on this machine (train/step_cost.h), for the
// profile's floors and for benchmarks. `why_not` is set when the model does not describe the
// run (and the rest is empty).
struct StepFloor {
  std::string why_not;
  StepCost cost;
  MachinePeaks peaks;
  std::string basis;  // rows, non-zeros and touched rows the cost was computed for
  // What the cost was computed from (train/step_cost.h), for the scaling plan.
  std::vector<LayerShape> shapes;
  std::map<std::string, double> target_nnz;
  bool tensor = false;
  double seconds() const { return cost.floor_seconds(peaks); }
};

struct EpochReport {
  uint64_t epoch = 0;  // 1-based
  double loss = 0;     // mean per example: data term + regularisation
  double data_loss = 0;
  double reg_loss = 0;
  double seconds = 0;
  double examples_per_second = 0;
  double alpha = 0;        // learning rate at the start of the epoch
  bool validated = false;  // a validation result follows
  ValidationResult validation;
};

// Training between two minibatch reports (TrainOptions::minibatch_report_interval), for
// monitoring within an epoch.
struct MinibatchReport {
  uint64_t step = 0;   // the update it was made after (1-based; a multiple of the interval)
  uint64_t epoch = 0;  // the epoch that update belongs to (1-based)
  // Mean per example over the updates since the previous report (or since the run started or
  // resumed): the data term with the penalties, as in EpochReport::data_loss.
  double loss = 0;
  uint64_t examples = 0;  // the examples of those updates
  double examples_per_second = 0;
  double alpha = 0;  // the learning rate of this update
};

class TrainingLoop {
 public:
  TrainingLoop(Network& net, const BoundData& data, TrainOptions options, LogSink log,
               Communicator* comm = nullptr);

  // Takes the training examples from `stream` (reading windows of the files as the epochs go)
  // instead of the bound datasets, which then only describe the data (docs/large-datasets.md).
  // Call before set_validation() and run().
  void set_stream(std::unique_ptr<ExampleStream> stream);
  // Evaluates `data` (bound to the same layers as the training data) during training; call before
  // run(). The datasets must outlive the trainer.
  // `sources` (one per binding, inputs then outputs): a streamed validation set, read a segment
  // of the training stream's window size at a time (`data` then binds headers); set_stream()
  // first.
  void set_validation(const BoundData& data, std::vector<StreamSource> sources = {});
  // Continues from a checkpoint's training state (weights are loaded into the network already);
  // `path` names the file it came from (a stop right away saves nothing new). ConfigError when
  // the state is mid-epoch and the minibatch size differs from the one it was saved with.
  void restore(const TrainingState& state, const std::string& path = "");
  // Times every step's phases and layers on `profiler` (core/profiler.h; it must outlive run());
  // run() then reports as `outputs` says. Null (the default): nothing is timed, and a step costs
  // one pointer test per range more than without the profiling code.
  void set_profiler(Profiler* profiler, ProfileOutputs outputs = {});
  // Runs the remaining epochs; returns one report per epoch completed. Throws DivergenceError on
  // a NaN/infinite loss (the last checkpoint on disk stays intact). After a stop request it
  // returns early (stopped() says so) with the state saved in stop_checkpoint().
  std::vector<EpochReport> run();
  // Puts every weight where the network's readers expect it: a sampled output layer holds its
  // weights transposed between its steps (train/sampled_output.h). run() does it before it
  // returns or throws and before validation and checkpoints; an on_epoch callback that reads
  // the network calls it first (a no-op when nothing is held apart).
  void sync_weights();

  // Network + training state, ready to write. Collective with model-parallel layers (every
  // rank calls it; rank 0's file is the complete one).
  NetworkFile snapshot() const;
  // As snapshot(), the weights and their state read in place where they are in host memory
  // (Network::to_file_view): for writing at once, valid until the next training step.
  NetworkFile snapshot_view() const;
  // Checkpoint path for an epoch: "<checkpoint_name><epoch>.nc".
  std::string checkpoint_path(uint64_t epoch) const;
  void remove_old_checkpoint();
  uint64_t epoch() const { return epoch_; }
  uint64_t step() const { return step_; }
  // After run(): the signal that stopped it (0: it ran to its end), the file holding the state
  // it stopped in ("" when nothing was saved: no checkpoint name, or no training done yet), and
  // a description of where it stopped ("in epoch 4 after minibatch 17 of 40").
  int stopped() const { return stopped_signal_; }
  const std::string& stop_checkpoint() const { return stop_checkpoint_; }
  const std::string& stop_position() const { return stop_position_; }
  // Called on every rank with the path of each checkpoint rank 0 writes; for tools that track
  // files.
  std::function<void(const std::string&)> on_checkpoint;
  // Called at the start of every update with its 1-based step number (fault-injection tests).
  std::function<void(uint64_t step)> on_step;

  // Called after each epoch (and its validation) with its report, on rank 0 only (like
  // checkpoints); for per-epoch logs.
  std::function<void(const EpochReport&)> on_epoch;
  // Called every minibatch_report_interval updates, on rank 0 only; costs a read of the loss
  // sums (a synchronisation on a GPU).
  std::function<void(const MinibatchReport&)> on_minibatch;
  // This process's rank among the training processes (0 when training alone).
  int rank() const { return comm_->rank(); }
  // After run(): the epoch whose weights the network holds when keep_best restored them (0 when
  // no validation ran or the last epoch was the best), and why training stopped early ("" when
  // it ran every epoch).
  uint64_t restored_epoch() const { return restored_epoch_; }
  // Steps recorded as CUDA graphs so far (Backend::begin_step_graph; 0 on the CPU backend).
  uint64_t graph_steps() const { return graph_steps_; }
  // Whether some sparse input's matrix is updated row by row (train/row_sparse.h): the mode
  // asked for may have been carried out densely (WeightNorm, decay, or CUDA's row kernels off).
  bool row_sparse_updates() const { return row_sparse_ != nullptr; }
  const std::string& stop_reason() const { return stop_reason_; }
  // The floor of one full minibatch's step as this loop runs it (its layers, rows per rank,
  // optimizer, row-sparse updates, precision), with the peaks measured now on the network's
  // backend (a fraction of a second; longer on a GPU's first call).
  StepFloor step_floor();
  // `nn-train --plan`: this loop's network, data and options on `parallel`'s ranks over `link`
  // (train/scaling_plan.h), one string per line, computed in one process from the floors of
  // step_floor() and, per `run`, from timed steps or a device's figures.
  struct PlanRun {
    // Steps timed on this machine (after `warmup` untimed ones): each part's compute is scaled
    // from what it measured. Trains the network's weights (the caller discards them) and
    // writes nothing. 0: the floors alone.
    uint32_t warmup = 3, steps = 0;
    // A device that is not here: its peaks instead of this machine's (nothing is timed), and
    // optionally its measured one-rank step in seconds (0: its floors alone).
    std::optional<DevicePeaks> device;
    double device_step_s = 0.0;
  };
  std::vector<std::string> scaling_report(const ParallelSettings& parallel, const LinkModel& link,
                                          const PlanRun& run);

 private:
  NetworkFile snapshot_of(bool borrow) const;
  // The optimizer's BF16 weight copies (Parameter::bf16_written) are trusted only while this
  // loop alone changes the weights: forgotten before anything else may (a callback, the best
  // epoch's weights restored) and when run() ends.
  void forget_bf16_copies();
  // One epoch (or, resumed mid-epoch, the rest of it). Returns false when a stop request ended
  // it before its last minibatch (batch_ says how far it got).
  bool run_epoch(EpochReport& report);
  // run() without the profile report at its end.
  std::vector<EpochReport> run_epochs();
  // The profiler's table and trace (rank 0), after the last step run() takes.
  void report_profile();
  // The profile's phases beside their floors (train/floor_report.h), after training; rank 0.
  std::vector<std::string> profile_floors();
  // The closed-form solution as epoch 1 (options_.least_squares).
  void solve_epoch(EpochReport& report);
  // The stop request all ranks agree on (the largest signal number of any rank; 0: none).
  // Collective when there are several ranks.
  int agreed_stop_signal();
  // Saves the state for a stop by `signal` (collective: every rank calls it; rank 0 writes, and
  // nobody returns before the file is complete).
  void stop(int signal);
  // Validation after an epoch: logs, tracks the best; returns false to stop early.
  bool validate(EpochReport& report);
  // `slice`: where the batch's rows sit in the global minibatch of `global_rows`; `whole`: that
  // global minibatch (model parallel only, else null).
  // The batch's error is added into loss_sums_ on the backend (losses and penalties, not read
  // back). With several ranks it is read back, all-reduced and returned (the global batch's error;
  // backward and the update are skipped when it is not finite); alone it returns 0 and the
  // error stays in loss_sums_ until the next read.
  double train_batch(const HostBatch& batch, const HostBatch* whole, float alpha, RowSlice slice,
                     uint32_t global_rows);
  double regularization_loss();
  // Logs the reader's share of a streamed epoch.
  void log_stream_epoch(double epoch_seconds);
  // Adds the error since the last minibatch report (`epoch_total`: the epoch's error so far) and
  // makes the report of the update just done, which ran at learning rate `alpha`.
  void report_minibatch(double epoch_total, float alpha);
  // Resets the loss sums at the start of an epoch, to `total` (resumed mid-epoch) or 0.
  void clear_loss_sums(double total = 0.0);
  // Reads the loss sums back (one transfer) and throws DivergenceError naming the first batch of
  // the epoch (of `batches`) whose error was NaN or infinite, if there was one.
  std::vector<double> read_loss_sums(uint64_t batches);

  Network& net_;
  BoundData data_;
  TrainOptions options_;
  LogSink log_;
  LocalCommunicator local_comm_;
  Communicator* comm_;
  Optimizer optimizer_;
  std::unique_ptr<ExampleStream> stream_;  // streaming input (null: datasets in memory)
  BatchLoader loader_;
  // Assembles the next minibatch (this rank's rows, and the whole batch for model-parallel
  // layers) while the current one trains.
  Prefetcher<std::pair<HostBatch, HostBatch>> prefetcher_;
  OutputLosses losses_;
  std::unique_ptr<SampledOutput> sampled_;  // the output layer with Sampling (null: none)
  // Row-sparse updates of sparse inputs' matrices (null: none), and how each such matrix is
  // updated (logged when the run starts).
  std::unique_ptr<RowSparseUpdates> row_sparse_;
  std::vector<std::string> row_sparse_notes_;
  // The parameters the optimizer updates after each step (not the sampled layer's), grouped by
  // layer in the network's declaration order, so each layer's update can be timed as a range.
  struct UpdateGroup {
    const Layer* layer;
    std::vector<Parameter*> params;
  };
  std::vector<UpdateGroup> update_groups_;
  std::vector<Parameter*> update_params_;  // every group's parameters, in order
  Profiler* profiler_ = nullptr;           // null: not profiling
  ProfileOutputs profile_outputs_;
  uint64_t epoch_ = 0, step_ = 0;
  Rng shuffle_rng_;
  // Mid-epoch position: minibatches of epoch epoch_ + 1 done, the shuffle generator's state
  // before that epoch's shuffle, and the errors summed so far (a stopped run's checkpoint).
  uint64_t batch_ = 0;
  uint64_t epoch_rng_state_ = 0;
  double epoch_loss_ = 0.0;
  std::string state_file_;  // a file holding exactly the current state ("" after any update)
  int stopped_signal_ = 0;
  std::string stop_checkpoint_, stop_position_;
  // Data parallel only: the communicator for the backend's gradient buffers (NCCL with the CUDA
  // backend; null: comm_ itself, through host staging) and the reducer using it.
  std::unique_ptr<Communicator> backend_comm_;
  std::vector<std::string> placement_;  // one line per rank (rank 0), logged by run()
  std::unique_ptr<GradientReducer> reducer_;
  // Training-loss accumulator in the backend's memory (math::LossSumSlot layout), read back once
  // per reporting interval; reg_sums_: the regularisation loss (unsplit, split parameters).
  DeviceArray<double> loss_sums_, reg_sums_;
  bool has_batch_norm_ = false;
  bool model_parallel_ = false;  // some layers are split over the ranks
  double reduce_wait_reported_ = 0;
  std::unique_ptr<Validator> validator_;
  bool have_best_ = false;
  ValidationResult best_;
  uint64_t best_epoch_ = 0, restored_epoch_ = 0;
  uint32_t evaluations_since_best_ = 0;
  NetworkFile best_file_;  // the best evaluated weights (keep_best)
  std::string stop_reason_;
  double epoch_seconds_sum_ = 0;  // for the ETA
  // Minibatch reports: the error and examples summed since the last one, the epoch's error
  // total when it was made (the loss sums count per epoch), and when it was made.
  double report_error_ = 0, report_base_ = 0;
  uint64_t report_examples_ = 0;
  std::chrono::steady_clock::time_point report_time_;
  uint64_t epochs_timed_ = 0;
  // CUDA Graphs (Backend::begin_step_graph, docs/performance.md). A step is recorded only when
  // a step of the same rows ran before without a graph (graph_warm_rows_: so every plan, buffer
  // and scratch slot it needs exists), and never while profiling or with several ranks.
  // graph_off_: why steps are not recorded ("" while they may be); graph_steps_: steps
  // recorded, of steps_run_.
  bool begin_step_graph(uint32_t rows);
  // Uploads beside the stream (Backend::begin_side_uploads, docs/performance.md): the step's
  // inputs and targets copied into the buffer set of its parity (`set`) once the step before the
  // previous one, the last to read that set, is done (set_marks_, Backend::stream_mark), while
  // the previous step still runs. train_batch then loads nothing (inputs_preloaded_). Not with
  // model-parallel layers (their whole-batch inputs and sliced targets load in the step).
  void preload_batch(const HostBatch& batch, unsigned set);
  uint64_t set_marks_[2] = {0, 0};
  bool inputs_preloaded_ = false;
  std::string graph_off_;
  std::vector<uint32_t> graph_warm_rows_;
  uint64_t graph_steps_ = 0, steps_run_ = 0;
};

}  // namespace nn
