// The training loop: epochs of shuffled minibatches (the next batch is assembled on another
// thread while the current one trains), loss and output deltas per output layer, backward pass,
// optimizer updates, per-epoch reports, atomic checkpoints, and exact resumption from one.
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

 private:
  EpochReport run_epoch();
  double train_batch(const HostBatch& batch, float alpha);
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
};

}  // namespace nn
