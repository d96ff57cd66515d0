// The public Trainer and train_cdl(): datasets bound to a Model's network, run by the engine's
// training loop (train/training_loop.h) one epoch report at a time; train_cdl() is a TrainJob
// (nn/train_job.h) made from the command file.
#include "nn/trainer.h"

#include <memory>

#include "api/dataset_impl.h"
#include "api/model_impl.h"
#include "api/train_setup.h"
#include "api/warm_start_stage.h"
#include "core/error.h"
#include "core/stop_request.h"
#include "distributed/process.h"
#include "model/binding.h"
#include "nn/command_file.h"
#include "nn/train_job.h"
#include "train/hyper_parameters.h"
#include "train/tensorboard_log.h"

namespace nn::api {
namespace {

// Thrown from the epoch callback to leave the engine's loop after a whole epoch.
struct StopRequested {};

// The network's input layers must have been built for the kind of data now bound to them.
void check_input_kinds(const Model::Impl& m, const BoundData& bound) {
  for (const auto& in : bound.inputs) {
    auto it = m.sparse_inputs.find(in.layer);
    const bool built_sparse = it != m.sparse_inputs.end() && it->second;
    if (built_sparse != in.dataset->is_sparse())
      throw ConfigError("dataset '" + in.dataset->name + "' is " +
                        (in.dataset->is_sparse() ? "sparse" : "dense") + " but input layer '" +
                        in.layer + "' was built for " + (built_sparse ? "sparse" : "dense") +
                        " data (give the model's DataShape the same kind)");
  }
}

}  // namespace

struct Trainer::Impl {
  std::shared_ptr<Model> model;
  std::vector<Dataset> data;
  std::vector<ExampleSet> sets;  // the engine's binding takes a vector of ExampleSets
  BoundData bound;
  std::unique_ptr<Profiler> profiler;  // null: not profiling; outlives the loop that holds it
  std::unique_ptr<nn::TrainingLoop> trainer;
  std::shared_ptr<Communicator> comm;
  std::unique_ptr<TensorBoardLog> tensorboard;  // null: none, or not rank 0
  uint32_t epochs = 0;
  bool finished = false;  // the TensorBoard end record is written
};

namespace {

std::unique_ptr<Trainer::Impl> make_impl(std::shared_ptr<Model> model, std::vector<Dataset> data,
                                         TrainOptions options,
                                         const std::function<void(const std::string&)>& log,
                                         const std::string& files, const std::string& warm_start) {
  if (!model) throw ConfigError("Trainer: no model");
  auto impl = std::make_unique<Trainer::Impl>();
  impl->model = std::move(model);
  impl->data = std::move(data);
  for (const Dataset& d : impl->data) impl->sets.push_back(d.impl().data);
  Model::Impl& m = impl->model->impl();
  impl->bound = bind_datasets(m.net->spec(), impl->sets, /*need_outputs=*/true, files);
  check_input_kinds(m, impl->bound);
  // The network learns its items from the data (saved with it, as nn-train's are).
  m.net->name_items(impl->sets);
  impl->comm = world_communicator();
  const LogSink sink = log ? LogSink(log) : null_log();
  if (!warm_start.empty())
    apply_warm_start(warm_start, options.optimizer.kind, *m.net, *impl->comm, sink);
  impl->trainer = std::make_unique<nn::TrainingLoop>(*m.net, impl->bound, std::move(options), sink,
                                                     impl->comm.get());
  return impl;
}

std::vector<EpochStats> run_trainer(nn::TrainingLoop& trainer, const EpochCallback& on_epoch,
                                    TensorBoardLog* tensorboard) {
  std::vector<EpochStats> out;
  trainer.on_epoch = [&](const EpochReport& r) {
    if (tensorboard) tensorboard->write_epoch(r);
    out.push_back(epoch_stats(r));
    if (on_epoch) trainer.sync_weights();  // the callback may read the model
    if (on_epoch && !on_epoch(out.back())) throw StopRequested{};
  };
  try {
    trainer.run();
  } catch (const StopRequested&) {
  }
  trainer.on_epoch = nullptr;
  // A stop request (nn/stop.h) ended it mid-way; run() again continues from there.
  if (const int signal = trainer.stopped())
    throw Interrupted("stopped by " + signal_name(signal) + " " + trainer.stop_position() +
                          (trainer.stop_checkpoint().empty()
                               ? std::string()
                               : "; the training state is in " + trainer.stop_checkpoint()),
                      signal, trainer.stop_checkpoint());
  return out;
}

}  // namespace

Trainer::Trainer(std::shared_ptr<Model> model, std::vector<Dataset> data, TrainSettings s) {
  if (s.epochs == 0) throw ConfigError("epochs: must be positive");
  if (s.minibatch == 0) throw ConfigError("minibatch: must be positive");
  if (!(s.alpha > 0)) throw ConfigError("alpha: must be positive");
  TrainOptions o;
  o.epochs = s.epochs;
  o.minibatch = s.minibatch;
  o.seed = s.seed;
  o.optimizer = {optimizer_kind(s.optimizer),
                 s.alpha,
                 s.lambda,
                 s.lambda1,
                 s.mu,
                 s.mu1,
                 0.0f,
                 s.alpha_interval,
                 s.alpha_multiplier};
  o.checkpoint_name = s.checkpoint_name;
  o.checkpoint_interval = s.checkpoint_interval;
  o.sparse_update = sparse_update_mode(s.sparse_update);
  if (!model) throw ConfigError("Trainer: no model");
  apply_network_settings(model->impl().net->spec(), s.shuffle, o);
  // Minibatch reports exist for the TensorBoard file alone.
  if (!s.tensorboard.empty()) o.minibatch_report_interval = s.tensorboard_interval;
  const std::vector<HyperParameter> hparams = hyper_parameters(o, model->impl().net->spec());
  impl_ = make_impl(std::move(model), std::move(data), std::move(o), s.log, "the given datasets",
                    s.warm_start);
  impl_->epochs = s.epochs;
  if (!s.tensorboard.empty() && impl_->comm->rank() == 0) {
    const LogSink log = s.log ? LogSink(s.log) : null_log();
    impl_->tensorboard = std::make_unique<TensorBoardLog>(s.tensorboard, hparams, nullptr, log);
    TensorBoardLog* tb = impl_->tensorboard.get();
    impl_->trainer->on_minibatch = [tb](const MinibatchReport& m) { tb->write_minibatch(m); };
  }
  if (s.profile || !s.trace.empty()) {
    ProfilerOptions settings;
    settings.trace = !s.trace.empty();
    settings.trace_steps = s.trace_steps;
    impl_->profiler = std::make_unique<Profiler>(
        impl_->model->impl().net->backend().make_profile_clock(), settings);
    impl_->trainer->set_profiler(impl_->profiler.get(), {s.profile, s.trace});
  }
}

Trainer::~Trainer() {
  // A Trainer left before its last epoch: TensorBoard shows the run as not finished.
  if (impl_ && impl_->tensorboard && !impl_->finished) {
    try {
      impl_->tensorboard->finish(/*success=*/false);
    } catch (...) {
    }
  }
}

std::vector<EpochStats> Trainer::run(const EpochCallback& on_epoch) {
  std::vector<EpochStats> out = run_trainer(*impl_->trainer, on_epoch, impl_->tensorboard.get());
  if (impl_->tensorboard && !impl_->finished && impl_->trainer->epoch() >= impl_->epochs) {
    impl_->tensorboard->finish(/*success=*/true);
    impl_->finished = true;
  }
  return out;
}

uint64_t Trainer::epoch() const {
  return impl_->trainer->epoch();
}

std::shared_ptr<Model> train_cdl(const std::string& cdl_path, const EpochCallback& on_epoch,
                                 const ModelOptions& options,
                                 const std::function<void(const std::string&)>& log,
                                 std::optional<bool> resume) {
  const CommandFile cdl = CommandFile::read(cdl_path);
  if (cdl.command() != "Train")
    throw ConfigError(cdl_path + ": Command is " + cdl.command() +
                      "; train_cdl runs Train commands");
  // nn-train's run (api/training_run.cpp) with the caller's backend, a seed of 1 when the file
  // has none (nn-train draws one) and no per-epoch log file.
  TrainJob job = train_job(cdl, /*default_seed=*/1);
  if (resume) job.resume = *resume;
  job.backend = options.backend;
  job.threads = options.threads;
  job.device = options.device;
  job.epoch_log = false;
  return run_training(job, log ? LogSink(log) : null_log(), on_epoch);
}

}  // namespace nn::api
