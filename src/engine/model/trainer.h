// The training loop: epochs of shuffled minibatches (the next batch is assembled on another
// thread while the current one trains), loss and output deltas per output layer, backward pass,
// optimizer updates, per-epoch reports, atomic checkpoints, and exact resumption from one.
// With a communicator of several ranks the loop is data parallel: every rank draws the same
// shuffle, takes its slice of each global minibatch (rank_rows), and the gradients and losses
// are summed across ranks weighted by rows; only rank 0 writes checkpoints.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/random.h"
#include "dist/communicator.h"
#include "model/batch_loader.h"
#include "model/data_parallel.h"
#include "model/network.h"
#include "model/step.h"
#include "optim/optimizer.h"

namespace nn {

struct TrainOptions {
  uint32_t epochs = 1;           // total epochs (a resumed run continues up to this)
  uint32_t minibatch = 1024;
  OptimizerSettings optimizer;
  bool shuffle = true;
  uint64_t seed = 1;
  std::string checkpoint_name;   // "" => no checkpoints
  int checkpoint_interval = 0;   // epochs between checkpoints
  double progress_seconds = 10;  // in-epoch progress lines when an epoch runs longer than this
  // Data parallelism (a communicator with several ranks): gradient buckets and whether their
  // all-reduce overlaps the backward pass (model/data_parallel.h).
  GradientReducerOptions reduction;
};

struct EpochReport {
  uint64_t epoch = 0;     // 1-based
  double loss = 0;        // mean per example: data term + regularisation
  double data_loss = 0;
  double reg_loss = 0;
  double seconds = 0;
  double examples_per_second = 0;
};

class Trainer {
 public:
  Trainer(Network& net, const BoundData& data, TrainOptions options, LogSink log,
          Communicator* comm = nullptr);

  // Continues from a checkpoint's training state (weights are loaded into the network already).
  void restore(const TrainingState& state);
  // Runs the remaining epochs; returns one report per epoch run. Throws DivergenceError on a
  // NaN/infinite loss (the last checkpoint on disk stays intact).
  std::vector<EpochReport> run();

  // Network + training state, ready to write.
  NetworkFile snapshot() const;
  // Checkpoint path for an epoch: "<checkpoint_name><epoch>.nc".
  std::string checkpoint_path(uint64_t epoch) const;
  uint64_t epoch() const { return epoch_; }
  uint64_t step() const { return step_; }
  // Called after each checkpoint is written (path); for tools that track files.
  std::function<void(const std::string&)> on_checkpoint;
  // Called at the start of every update with its 1-based step number (fault-injection tests).
  std::function<void(uint64_t step)> on_step;

 private:
  EpochReport run_epoch();
  // `slice`: where the batch's rows sit in the global minibatch of `global_rows`.
  double train_batch(const HostBatch& batch, float alpha, RowSlice slice, uint32_t global_rows);
  double regularization_loss();

  Network& net_;
  BoundData data_;
  TrainOptions options_;
  LogSink log_;
  LocalCommunicator local_comm_;
  Communicator* comm_;
  Optimizer optimizer_;
  BatchLoader loader_;
  OutputLosses losses_;
  uint64_t epoch_ = 0, step_ = 0;
  Rng shuffle_rng_;
  std::unique_ptr<GradientReducer> reducer_;  // data parallel only
  bool has_batch_norm_ = false;
  double reduce_wait_reported_ = 0;
};

}  // namespace nn
