// The public TrainJob's making (include/nn/train_job.h): from a CDL command file, and into the
// training loop's options. What the job does is in api/training_run.cpp.
#include "nn/train_job.h"

#include "api/command_file_impl.h"
#include "api/train_setup.h"
#include "config/enums.h"
#include "nn/error.h"

namespace nn::api {

TrainJob train_job(const CommandFile& cdl, uint64_t default_seed) {
  const CdlSpec& spec = cdl.impl().spec;
  const TrainingParameters& t = spec.training;
  TrainJob job;
  job.network_json = spec.network;
  job.data_files = spec.data;
  job.results = t.results;
  job.validation_files = t.validation_data;
  job.epochs = static_cast<uint32_t>(t.epochs);
  job.minibatch = t.minibatch;
  job.optimizer = to_string(t.optimizer);
  job.alpha = t.alpha;
  job.lambda = t.lambda;
  job.lambda1 = t.lambda1;
  job.mu = t.mu;
  job.mu1 = t.mu1;
  job.alpha_interval = t.alpha_interval;
  job.alpha_multiplier = t.alpha_multiplier;
  job.seed = spec.random_seed.value_or(default_seed);
  job.shuffle = t.shuffle_indices;
  job.checkpoint_name = t.checkpoint_name;
  job.checkpoint_interval = t.checkpoint_interval;
  job.checkpoints_kept = t.checkpoints_kept;
  job.validation_interval = t.validation_interval;
  job.validation_k = t.validation_k;
  job.validation_rank_input_items = t.validation_rank_input_items;
  job.patience = t.patience;
  job.keep_best = t.keep_best;
  job.stream = t.stream;
  job.solver = t.solver;
  job.fit_bias = t.fit_bias;
  job.zero_diagonal = t.zero_diagonal;
  job.sparse_update = t.sparse_update;
  job.profile = t.profile;
  job.trace = t.trace;
  if (t.trace_steps) job.trace_steps = *t.trace_steps;
  job.tensorboard = t.tensorboard;
  job.warm_start = t.warm_start;
  job.resume = t.resume;
  job.tensorboard_interval = t.tensorboard_interval;
  if (t.sampling) {
    job.sampling_negatives = t.sampling->negatives;
    job.sampling_distribution = to_string(t.sampling->distribution);
  }
  if (!spec.backend.empty()) job.backend = spec.backend;
  job.link = spec.link;
  if (spec.device) job.device = *spec.device;
  if (spec.precision) job.precision = to_string(*spec.precision);
  job.force_precision = spec.force_precision;
  job.parallel = spec.parallel == ParallelMode::Data    ? Parallelism::Data
                 : spec.parallel == ParallelMode::Model ? Parallelism::Model
                                                        : Parallelism::Auto;
  return job;
}

std::vector<std::string> optimizer_names() {
  std::vector<std::string> names;
  for (OptimizerKind k : {OptimizerKind::SGD, OptimizerKind::Momentum, OptimizerKind::Nesterov,
                          OptimizerKind::AdaGrad, OptimizerKind::AdaDelta, OptimizerKind::RMSProp,
                          OptimizerKind::Adam})
    names.push_back(to_string(k));
  return names;
}

ParallelMode parallel_mode(Parallelism p) {
  switch (p) {
    case Parallelism::Data:
      return ParallelMode::Data;
    case Parallelism::Model:
      return ParallelMode::Model;
    case Parallelism::Auto:
      break;
  }
  return ParallelMode::Auto;
}

TrainOptions train_options(const TrainJob& job) {
  TrainOptions o;
  o.epochs = job.epochs;
  o.minibatch = job.minibatch;
  o.seed = job.seed;
  o.optimizer = {optimizer_kind(job.optimizer),
                 job.alpha,
                 job.lambda,
                 job.lambda1,
                 job.mu,
                 job.mu1,
                 0.0f,  // decay: the network's (apply_network_settings)
                 job.alpha_interval,
                 job.alpha_multiplier};
  o.checkpoint_name = job.checkpoint_name;
  o.checkpoint_interval = job.checkpoint_interval;
  o.checkpoints_kept = job.checkpoints_kept;
  o.validation_interval = job.validation_interval;
  o.validation_k = job.validation_k;
  o.validation_rank_input_items = job.validation_rank_input_items;
  o.patience = job.patience;
  o.keep_best = job.keep_best;
  // Minibatch records are the TensorBoard file's: without one, no reports.
  if (!job.tensorboard.empty()) o.minibatch_report_interval = job.tensorboard_interval;
  if (job.solver != "Gradient" && job.solver != "LeastSquares")
    throw ArgumentError("solver \"" + job.solver + "\": expected Gradient or LeastSquares");
  o.least_squares = job.solver == "LeastSquares";
  if (o.least_squares) o.epochs = 1;  // one solve
  o.least_squares_bias = job.fit_bias;
  o.least_squares_zero_diagonal = job.zero_diagonal;
  try {
    o.sparse_update = sparse_update_mode(job.sparse_update);
  } catch (const ConfigError& e) {
    throw ArgumentError(e.what());
  }
  return o;
}

}  // namespace nn::api
