// Executes a TrainJob: datasets -> network -> trainer -> result file; or, for Validate, the
// gradient check of the freshly initialised network on the first minibatch.
#include "nn-train/train_job.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "api/model_impl.h"
#include "api/train_setup.h"
#include "backend/backend.h"
#include "backend/backend_choice.h"
#include "common/tool_main.h"
#include "config/parse.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "io/netcdf_dataset.h"
#include "distributed/process.h"
#include "model/binding.h"
#include "model/model_summary.h"
#include "io/network_file.h"
#include "nn-train/epoch_log.h"

namespace nn::tool {
namespace fs = std::filesystem;

std::string newest_checkpoint(const std::string& checkpoint_name, uint64_t* epoch_out) {
  const fs::path prefix(checkpoint_name);
  fs::path dir = prefix.parent_path();
  if (dir.empty()) dir = ".";
  const std::string stem = prefix.filename().string();
  std::string best;
  uint64_t best_epoch = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= stem.size() + 3 || name.compare(0, stem.size(), stem) != 0 ||
        name.compare(name.size() - 3, 3, ".nc") != 0)
      continue;
    const std::string digits = name.substr(stem.size(), name.size() - stem.size() - 3);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const uint64_t e = std::stoull(digits);
    if (best.empty() || e > best_epoch) {
      // Spelled as the user gave the prefix ("ck" => "ck3.nc", not "./ck3.nc").
      best = prefix.has_parent_path() ? entry.path().string() : name;
      best_epoch = e;
    }
  }
  if (epoch_out) *epoch_out = best_epoch;
  return best;
}

namespace {

// Datasets, resolved spec and the network built on them; shared by training and validation.
struct LoadedModel {
  std::vector<ExampleSet> sets, validation_sets;
  BoundData validation;  // examples == 0 when there is no validation set
  NetworkSpec spec;
  BoundData bound;
  std::shared_ptr<api::Model> model;  // the library's Model: backend + network
  Network* net = nullptr;
};

// `split_layers`: let the data/model parallel rule split layers over the ranks (training);
// the gradient check keeps every layer whole on every rank.
std::unique_ptr<LoadedModel> load_model(const TrainJob& job, const LogSink& log,
                                        bool split_layers) {
  auto m = std::make_unique<LoadedModel>();
  m->spec = load_network_json(job.network_json);
  std::string files;
  for (const auto& f : job.data_files) {
    auto more = read_datasets(f);
    for (auto& s : more) {
      log("dataset '" + s.name + "' from " + f + ": " + std::to_string(s.examples) + " examples, " +
          std::to_string(s.features()) + " features" +
          (s.is_sparse() ? ", " + std::to_string(s.nnz()) + " non-zeros" : std::string(", dense")));
      m->sets.push_back(std::move(s));
    }
    files += (files.empty() ? "" : ", ") + f;
  }
  resolve_auto_sizes(m->spec, m->sets);
  m->bound = bind_datasets(m->spec, m->sets, /*need_outputs=*/true, files);
  std::string validation_files;
  for (const auto& f : job.validation_files) {
    auto more = read_datasets(f);
    for (auto& s : more) {
      log("validation dataset '" + s.name + "' from " + f + ": " + std::to_string(s.examples) +
          " examples");
      m->validation_sets.push_back(std::move(s));
    }
    validation_files += (validation_files.empty() ? "" : ", ") + f;
  }
  if (!m->validation_sets.empty())
    m->validation =
        bind_datasets(m->spec, m->validation_sets, /*need_outputs=*/true, validation_files);
  // Under mpirun the rule of model/parallel_plan.h picks data or model parallelism per layer;
  // the choice and its reason are printed once.
  NetworkParallel parallel;
  if (split_layers) parallel.comm = world_communicator().get();
  parallel.settings.minibatch = static_cast<uint32_t>(
      std::min<uint64_t>(job.options.minibatch, std::max<uint64_t>(m->bound.examples, 1)));
  parallel.settings.training = true;
  parallel.settings.optimizer_states = optimizer_state_count(job.options.optimizer.kind);
  parallel.settings.memory_budget = memory_budget() / uint64_t(std::max(ranks_on_this_host(), 1));
  parallel.settings.default_mode = job.parallel;
  if (!job.validation_files.empty())
    parallel.settings.keep_whole =
        "a validation set is used, which split layers do not support yet";
  // Built and initialised with the run's seed the way every front end builds a model
  // (api/model_impl.h); a resumed run then loads the checkpoint's arrays over it.
  std::string note;
  auto backend = make_backend_for(m->spec, job.backend, job.threads, job.device, &note);
  if (!note.empty()) log(note);
  m->model = api::Model::Impl::create(std::move(backend), m->spec,
                                      m->bound.sparse_inputs(), nullptr, job.options.seed,
                                      parallel);
  m->net = m->model->impl().net.get();
  if (!m->net->parallel_plan().empty()) {
    log("parallel plan for " + std::to_string(world_size()) +
        " processes (per layer; \"Parallel\" in the network or the command file overrides it):");
    for (const LayerChoice& c : m->net->parallel_plan()) log("  " + describe(c));
  }
  return m;
}

// Tests make one rank fail mid-epoch to check that the whole job ends cleanly:
// NN_TEST_FAIL_RANK=r NN_TEST_FAIL_STEP=s [NN_TEST_FAIL_MODE=throw|exit|hang] (default throw).
std::function<void(uint64_t)> test_failure_injection(int rank) {
  const char* r = std::getenv("NN_TEST_FAIL_RANK");
  const char* s = std::getenv("NN_TEST_FAIL_STEP");
  if (!r || !s || std::atoi(r) != rank) return nullptr;
  const uint64_t at = std::strtoull(s, nullptr, 10);
  const char* m = std::getenv("NN_TEST_FAIL_MODE");
  const std::string mode = m ? m : "throw";
  return [at, mode](uint64_t step) {
    if (step != at) return;
    if (mode == "exit") std::_Exit(3);  // dies without a word, as a crashed rank would
    if (mode == "hang")
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    throw Error("injected failure at step " + std::to_string(step) + " (NN_TEST_FAIL_RANK)");
  };
}

// The trainer's divergence message with the checkpoint to go back to named (or its absence).
std::string with_checkpoint_note(std::string message, const std::string& checkpoint) {
  const size_t generic = message.find(" The last checkpoint");
  if (generic != std::string::npos) message.erase(generic);
  if (checkpoint.empty()) return message + " No checkpoint was written before it.";
  return message + " The last checkpoint, " + checkpoint + ", is intact.";
}

}  // namespace

int run_train_job(const TrainJob& job, const LogSink& log) {
  const auto start = std::chrono::steady_clock::now();
  auto model = load_model(job, log, /*split_layers=*/true);
  const BoundData& bound = model->bound;
  const NetworkSpec& spec = model->spec;
  Network& net = *model->net;
  TrainOptions options = job.options;
  api::apply_network_settings(spec, job.shuffle, options);
  // For measurements: NN_GRADIENT_OVERLAP=0 reduces gradients only after the backward pass.
  if (const char* v = std::getenv("NN_GRADIENT_OVERLAP")) options.reduction.overlap = *v != '0';

  // Temporary files of checkpoints a killed run was writing are incomplete: never resumed from,
  // removed here once their process is gone.
  if (!options.checkpoint_name.empty())
    for (const std::string& stale : remove_stale_temp_files(options.checkpoint_name, true))
      log("removed stale temporary file " + stale);

  NetworkFile checkpoint;
  bool resumed = false;
  std::string resumed_from;
  if (job.resume && !options.checkpoint_name.empty()) {
    uint64_t epoch = 0;
    const std::string path = newest_checkpoint(options.checkpoint_name, &epoch);
    if (!path.empty()) {
      checkpoint = read_network_file(path);
      if (!checkpoint.training.present)
        throw DataError(path + ": has no training state (not written by nn-train); cannot resume");
      net.load_arrays(checkpoint);
      resumed = true;
      resumed_from = path;
      log("resuming from " + path);
    } else {
      log("no checkpoint matching '" + options.checkpoint_name + "<epoch>.nc'; starting afresh");
    }
  }
  if (resumed) options.seed = checkpoint.training.seed;

  // Under mpirun every rank trains on its slice of each minibatch (train/data_parallel.h);
  // only rank 0 writes the result and checkpoints.
  std::shared_ptr<Communicator> comm = world_communicator();
  TrainingLoop trainer(net, bound, options, log, comm.get());
  trainer.on_step = test_failure_injection(comm->rank());
  if (resumed) trainer.restore(checkpoint.training);
  if (model->validation.examples > 0) trainer.set_validation(model->validation);
  log("model '" + (spec.name.empty() ? job.network_json : spec.name) + "':");
  for (const auto& line : format_summary(summarize(net), net.max_batch())) log(line);

  // The per-epoch log is written as epochs end; a resumed run appends to it.
  const std::string log_path = beside_results(job.results, ".epochs.jsonl");
  std::unique_ptr<EpochLog> epoch_log;  // rank 0's alone under mpirun
  if (comm->rank() == 0) {
    epoch_log = std::make_unique<EpochLog>(log_path, resumed);
    trainer.on_epoch = [&](const EpochReport& r) { epoch_log->write(r); };
  }
  if (trainer.epoch() >= options.epochs)
    log("already trained for " + std::to_string(trainer.epoch()) + " epochs; nothing to do");
  std::string last_checkpoint = resumed ? resumed_from : std::string();
  trainer.on_checkpoint = [&](const std::string& path) { last_checkpoint = path; };
  try {
    trainer.run();
  } catch (const DivergenceError& e) {
    throw DivergenceError(with_checkpoint_note(e.what(), last_checkpoint));
  }
  {
    const NetworkFile result = trainer.snapshot();  // collective with model-parallel layers
    if (comm->rank() == 0) write_network_file(job.results, result);
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", secs);
  log("wrote " + (job.results == "-" ? std::string("the network to standard output") : job.results) +
      " (total " + buf + " s); per-epoch log " + log_path);
  if (comm->rank() == 0) plot_epoch_log(log_path, beside_results(job.results, ".curve.png"), log);
  return 0;
}

int run_validate_job(const TrainJob& job, const GradientCheckOptions& check, const LogSink& log) {
  auto model = load_model(job, log, /*split_layers=*/false);
  Network& net = *model->net;  // initialised with job.options.seed by load_model
  const HostBatch batch = first_batch(model->bound, job.options.minibatch);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", check.epsilon);
  log("gradient check of " + job.network_json + " on the first " + std::to_string(batch.rows) +
      " examples (" + std::to_string(net.parameter_count()) + " parameters, " +
      (check.central ? "central" : "one-sided") + " differences, epsilon " + buf + ")");
  GradientChecker checker(net, model->bound, batch, check);
  const GradientCheckReport report = checker.run();
  std::snprintf(buf, sizeof buf, "%.6g", report.loss);
  log(std::string("loss on the batch: ") + buf);
  for (const auto& p : report.parameters) log(describe(p));
  const size_t failed = report.failures();
  if (failed == 0) {
    log("gradient check passed: " + std::to_string(report.parameters.size()) +
        " weight and bias arrays");
    return 0;
  }
  std::string names;
  for (const auto& p : report.parameters)
    if (!p.passed()) names += (names.empty() ? "" : ", ") + p.name;
  if (world_rank() != 0) return 1;  // rank 0 reports; every rank computed the same check
  std::fprintf(stderr,
               "%s: error: gradient check failed for %zu of %zu weight and bias arrays: %s\n",
               kToolName, failed, report.parameters.size(), names.c_str());
  return 1;
}

}  // namespace nn::tool
