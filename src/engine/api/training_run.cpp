// The public run_training() and run_gradient_check() (include/nn/train_job.h): datasets ->
// network -> training loop -> result file, or the gradient check of the freshly initialised
// network on the first minibatch. nn-train and the Python module's train() both run these.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "api/model_impl.h"
#include "api/precision_stage.h"
#include "api/train_setup.h"
#include "api/warm_start_stage.h"
#include "backend/backend_choice.h"
#include "backend/cpu/blas_kernels.h"
#include "backend/cuda_paths.h"
#include "backend/math/optimizer_math.h"
#include "config/parse.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/file_identity.h"
#include "core/format.h"
#include "core/memory_budget.h"
#include "core/profiler.h"
#include "core/stop_request.h"
#include "distributed/device_placement.h"
#include "distributed/link_measurement.h"
#include "distributed/process.h"
#include "io/netcdf_dataset.h"
#include "io/network_file.h"
#include "model/binding.h"
#include "model/link_model.h"
#include "model/model_summary.h"
#include "nn/train_job.h"
#include "train/checkpoint_files.h"
#include "train/epoch_log.h"
#include "train/example_stream.h"
#include "train/gradient_check.h"
#include "train/hyper_parameters.h"
#include "train/loss_curve.h"
#include "train/row_sparse.h"
#include "train/scaling_plan.h"
#include "train/step_cost.h"
#include "train/tensorboard_log.h"

namespace nn::api {
namespace {

// Thrown from the epoch callback to leave the training loop after a whole epoch.
struct StopRequested {};

// Datasets, resolved spec and the network built on them; shared by training and the gradient
// check.
struct LoadedModel {
  std::vector<ExampleSet> sets, validation_sets;
  // Streaming: the files' headers (what `bound` binds) and where to read the examples.
  std::unique_ptr<StreamedFiles> streamed, validation_streamed;
  // Streamed only to shard the data over mpirun's ranks (one window holding the whole file).
  bool sharded = false;
  BoundData validation;  // examples == 0 when there is no validation set
  NetworkSpec spec;
  BoundData bound;
  std::shared_ptr<Model> model;  // the library's Model: backend + network
  Network* net = nullptr;
};

// The datasets of `files`, each logged as read; `joined` lists the files for messages.
std::vector<ExampleSet> read_all(const std::vector<std::string>& files, bool validation,
                                 std::string& joined, const LogSink& log) {
  std::vector<ExampleSet> sets;
  for (const auto& f : files) {
    for (auto& s : read_datasets(f)) {
      std::string line = (validation ? "validation dataset '" : "dataset '") + s.name + "' from " +
                         f + ": " + std::to_string(s.examples) + " examples";
      if (!validation)
        line += ", " + std::to_string(s.features()) + " features" +
                (s.is_sparse() ? ", " + std::to_string(s.nnz()) + " non-zeros"
                               : std::string(", dense"));
      log(line);
      sets.push_back(std::move(s));
    }
    joined += (joined.empty() ? "" : ", ") + f;
  }
  return sets;
}

// The job's link (TrainJob::link), its errors named by where it came from.
LinkModel job_link(const std::string& name) {
  try {
    return resolve_link(name);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("Link (--link): ") + e.what());
  }
}

// Mean non-zeros per row of the sparse datasets bound to `layers`, by layer name.
std::map<std::string, double> mean_nnz(const std::vector<LayerData>& layers) {
  std::map<std::string, double> out;
  for (const LayerData& d : layers)
    if (d.dataset->is_sparse())
      out[d.layer] =
          double(d.dataset->nnz()) / double(std::max<uint64_t>(1, d.dataset->unique_examples));
  return out;
}

// Step 4 of the data/model rule from predicted step times over the job's link: this machine's
// floors (measured peaks) for each mode, as `nn-train --plan` predicts them from floors.
void predict_with_link(const TrainJob& job, const LoadedModel& m, NetworkParallel& parallel) {
  const LinkModel link = job_link(job.link);
  const std::map<std::string, double> input_nnz = mean_nnz(m.bound.inputs);
  const std::map<std::string, double> target_nnz = mean_nnz(m.bound.outputs);
  const OptimizerKind optimizer = optimizer_kind(job.optimizer);
  const uint64_t examples = m.bound.examples;
  // Sparse inputs whose matrices the training loop will update row by row (train/row_sparse.h,
  // ignoring its rarer exceptions such as shared matrices): their gradients are exchanged as the
  // minibatch's distinct rows, counted here from the data.
  SparseUpdateMode update = SparseUpdateMode::Exact;
  try {
    update = sparse_update_mode(job.sparse_update);
  } catch (const ConfigError& e) {
    throw ArgumentError(e.what());
  }
  const bool by_rows =
      update == SparseUpdateMode::Lazy ||
      (update == SparseUpdateMode::Exact && math::skips_have_closed_form(optimizer) &&
       job.lambda == 0.0f && job.lambda1 == 0.0f);
  std::map<std::string, double> touched;
  const auto batch = static_cast<uint32_t>(std::min<uint64_t>(job.minibatch, examples));
  for (const LayerData& d : m.bound.inputs)
    if (by_rows && d.dataset->is_sparse()) touched[d.layer] = mean_distinct_rows(*d.dataset, batch);
  parallel.settings.predicted_basis = "over " + describe_link(link) + ", floors of this machine";
  parallel.predict = [=](Network& net, const std::vector<LayerCostInput>& layers,
                         const ParallelSettings& settings) {
    ScalingInputs in;
    in.shapes = layer_shapes(net, input_nnz);
    for (LayerShape& shape : in.shapes) {
      const auto t = touched.find(shape.name);
      if (t == touched.end() || !row_sparse_on(net.backend(), update)) continue;
      shape.touched_rows = t->second;
      shape.row_sparse_update = true;
    }
    in.target_nnz = target_nnz;
    in.layers = layers;
    in.settings = settings;
    in.optimizer = optimizer;
    in.examples = examples;
    Backend& be = net.backend();
    in.peaks = be.host_memory() ? measure_peaks(be, 1024, size_t(128) << 20)
                                : measure_peaks(be, 8192, size_t(1) << 30);
    std::vector<ParallelSettings::Predicted> out;
    for (const ModeSeconds& t : predict_modes(in, link))
      out.push_back({t.data_compute + t.data_comm, t.model_compute + t.model_comm});
    return out;
  };
}

// How the layers may be split over the ranks (model/parallel_plan.h). `split_layers`: let the
// data/model parallel rule split layers (training); the gradient check keeps every layer whole.
NetworkParallel parallel_settings(const TrainJob& job, const LoadedModel& m, bool split_layers) {
  NetworkParallel parallel;
  if (split_layers) parallel.comm = world_communicator().get();
  parallel.settings.minibatch = static_cast<uint32_t>(
      std::min<uint64_t>(job.minibatch, std::max<uint64_t>(m.bound.examples, 1)));
  parallel.settings.training = true;
  parallel.settings.optimizer_states = optimizer_state_count(optimizer_kind(job.optimizer));
  parallel.settings.memory_budget = memory_budget() / uint64_t(std::max(ranks_on_this_host(), 1));
  parallel.settings.default_mode = parallel_mode(job.parallel);
  if (!job.validation_files.empty())
    parallel.settings.keep_whole =
        "a validation set is used, which split layers do not support yet";
  if (split_layers && !job.link.empty() && world_size() > 1) predict_with_link(job, m, parallel);
  return parallel;
}

// The training files opened for streaming when the job asks for it, or when it leaves it open
// and their datasets would not fit the memory budget whole; null: read them whole.
std::unique_ptr<StreamedFiles> open_for_streaming(const TrainJob& job, const LogSink& log) {
  if (job.stream == false) return nullptr;
  auto files = std::make_unique<StreamedFiles>(open_streamed_files(job.data_files));
  std::optional<uint64_t> bytes = 0;
  for (const StreamSource& s : files->sources)
    bytes = checked_add(*bytes, s.file->memory_bytes(s.dataset));
  const uint64_t budget = memory_budget() / uint64_t(std::max(ranks_on_this_host(), 1));
  const bool fits = bytes && *bytes <= budget;
  if (!job.stream && fits) return nullptr;
  log("streaming the training data (" +
      (job.stream ? std::string("asked for") : "they do not fit in memory") + ": " +
      (bytes ? format_bytes(*bytes) : std::string("more than 16 EiB")) + " whole, memory budget " +
      format_bytes(budget) + ")");
  for (size_t i = 0; i < files->headers.size(); ++i) {
    const ExampleSet& h = files->headers[i];
    log("dataset '" + h.name + "' from " + files->sources[i].file->path() + ": " +
        std::to_string(h.examples) + " examples, " + std::to_string(h.features()) + " features, " +
        (h.is_sparse() ? "sparse" : "dense") + " (streamed)");
  }
  return files;
}

// The job's Sampling (a CDL's TrainingParameters) on the Output layers without their own.
void apply_sampling(const TrainJob& job, NetworkSpec& spec) {
  if (job.sampling_negatives == 0) return;
  SamplingSpec s;
  s.negatives = job.sampling_negatives;
  std::string d = job.sampling_distribution;
  for (char& c : d) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (d == "popularity")
    s.distribution = SamplingDistribution::Popularity;
  else if (d != "uniform")
    throw ConfigError("Sampling: unknown Distribution \"" + job.sampling_distribution +
                      "\"; expected \"Uniform\" or \"Popularity\"");
  for (LayerSpec& l : spec.layers)
    if (l.kind == LayerKind::Output && !l.sampling.enabled()) l.sampling = s;
}

// The opt-in CUDA paths a run has turned on although no GPU run has passed them yet
// (backend/cuda_paths.h), said at the start so that a surprising result can be traced to them.
void note_untried_cuda_paths(const Backend& backend, const LogSink& log) {
  if (backend.name() != "cuda") return;
  for (const std::string& line : cuda_untried_paths_on()) log("CUDA path " + line);
}

std::unique_ptr<LoadedModel> load_model(const TrainJob& job, const LogSink& log, bool split_layers,
                                        bool may_stream) {
  auto m = std::make_unique<LoadedModel>();
  m->spec = load_network_json(job.network_json);
  apply_sampling(job, m->spec);
  std::string files, validation_files;
  if (may_stream) m->streamed = open_for_streaming(job, log);
  if (may_stream && !m->streamed && !job.stream.has_value() && world_size() > 1) {
    // Under mpirun the data are sharded by default: each rank reads only the examples its rows
    // take, from one window holding the whole file (the in-memory order, so the model is the one
    // an in-memory run trains). Undone below when the plan splits a layer (every rank then needs
    // every row), and not tried where streaming cannot go.
    auto headers = std::make_unique<StreamedFiles>(open_streamed_files(job.data_files));
    bool can_shard = true;
    for (const ExampleSet& h : headers->headers) can_shard = can_shard && !h.is_indexed();
    for (const LayerSpec& l : m->spec.layers)
      can_shard = can_shard && !(l.sampling.enabled() &&
                                 l.sampling.distribution == SamplingDistribution::Popularity);
    if (can_shard) {
      m->streamed = std::move(headers);
      m->sharded = true;
    }
  }
  if (m->streamed) {
    for (const auto& f : job.data_files) files += (files.empty() ? "" : ", ") + f;
    resolve_auto_sizes(m->spec, m->streamed->headers);
    attach_feature_names(m->spec, m->streamed->headers);
    m->bound = bind_datasets(m->spec, m->streamed->headers, /*need_outputs=*/true, files);
  } else {
    m->sets = read_all(job.data_files, /*validation=*/false, files, log);
    resolve_auto_sizes(m->spec, m->sets);
    attach_feature_names(m->spec, m->sets);
    m->bound = bind_datasets(m->spec, m->sets, /*need_outputs=*/true, files);
  }
  if (m->streamed && !m->sharded && !job.validation_files.empty()) {
    // Streamed training data: the validation set is streamed too.
    m->validation_streamed =
        std::make_unique<StreamedFiles>(open_streamed_files(job.validation_files));
    for (const auto& f : job.validation_files)
      validation_files += (validation_files.empty() ? "" : ", ") + f;
    log("validation datasets from " + validation_files + ": streamed");
    m->validation = bind_datasets(m->spec, m->validation_streamed->headers, /*need_outputs=*/true,
                                  validation_files);
  } else {
    m->validation_sets = read_all(job.validation_files, /*validation=*/true, validation_files, log);
    if (!m->validation_sets.empty())
      m->validation =
          bind_datasets(m->spec, m->validation_sets, /*need_outputs=*/true, validation_files);
  }
  // Under mpirun the rule picks data or model parallelism per layer; the choice and its reason
  // are printed once. Built and initialised with the run's seed the way every front end builds
  // a model (api/model_impl.h); a resumed run then loads the checkpoint's arrays over it.
  const NetworkParallel parallel = parallel_settings(job, *m, split_layers);
  std::string note;
  auto backend =
      make_backend_for(m->spec, job.backend, job.threads, resolve_device(job.device), &note);
  if (!note.empty()) log(note);
  if (backend->host_memory()) log(blas_kernels_note());
  note_untried_cuda_paths(*backend, log);
  const Precision precision = resolve_precision(job.precision, m->spec);
  if (precision == Precision::BF16)
    backend->set_precision(Precision::BF16);  // refuses, saying why, where BF16 cannot run
  m->model = Model::Impl::create(std::move(backend), m->spec, m->bound.sparse_inputs(), nullptr,
                                 job.seed, parallel);
  m->net = m->model->impl().net.get();
  apply_precision_stage(precision, job.force_precision, parallel.settings.minibatch, *m->net,
                        *world_communicator(), log);
  if (!m->net->parallel_plan().empty()) {
    log("parallel plan for " + std::to_string(world_size()) +
        " processes (per layer; \"Parallel\" in the network or the command file overrides it):");
    for (const LayerChoice& c : m->net->parallel_plan()) log("  " + describe(c));
  }
  if (m->sharded) {
    bool split = false;
    for (const LayerChoice& c : m->net->parallel_plan()) split = split || c.model_parallel;
    if (split) {  // model-parallel layers take every row of each minibatch: read the data whole
      m->streamed.reset();
      m->sharded = false;
      files.clear();
      m->sets = read_all(job.data_files, /*validation=*/false, files, log);
      m->bound = bind_datasets(m->spec, m->sets, /*need_outputs=*/true, files);
    } else {
      log("data sharded over the ranks: each rank reads only the examples of its rows of each "
          "minibatch, in the in-memory order (--no-stream reads the data whole on every rank)");
    }
  }
  return m;
}

// Where checkpoints go, and where a stopped run saves its state: the checkpoint prefix, or, for
// a run without checkpoints, one named after the results ("net.nc" -> "net").
std::string state_prefix(const TrainOptions& options) {
  return options.checkpoint_name.empty() ? options.stop_checkpoint_name : options.checkpoint_name;
}

// Temporary files of outputs that a killed run of the same targets was writing (named ones:
// most have no name, see core/atomic_file.h), removed once their process is gone.
void remove_stale_outputs(const TrainJob& job, const TrainOptions& options, const LogSink& log) {
  std::vector<std::string> removed;
  const auto add = [&](const std::vector<std::string>& paths) {
    removed.insert(removed.end(), paths.begin(), paths.end());
  };
  if (job.results != kStandardOutput) add(remove_stale_temp_files(job.results));
  add(remove_stale_temp_files(beside_results(job.results, ".epochs.jsonl")));
  add(remove_stale_temp_files(beside_results(job.results, ".curve.png")));
  if (!job.tensorboard.empty())
    add(remove_stale_temp_files(TensorBoardLog::path_in(job.tensorboard)));
  if (!job.trace.empty() && job.trace != kStandardOutput) add(remove_stale_temp_files(job.trace));
  if (!state_prefix(options).empty()) add(remove_stale_temp_files(state_prefix(options), true));
  for (const std::string& stale : removed) log("removed stale temporary file " + stale);
}

// --resume: the arrays of the newest checkpoint that reads back whole (checksums, structure,
// training state) loaded into `net`; each newer one that does not is logged with the reason.
// "" when the job does not resume or there is no checkpoint; DataError listing them all when
// none reads back. Under mpirun every rank reads the same files and must pick the same one.
std::string resume_from_checkpoint(const TrainJob& job, const TrainOptions& options, Network& net,
                                   NetworkFile& checkpoint, const LogSink& log) {
  const std::string prefix = state_prefix(options);
  if (!job.resume || prefix.empty()) return "";
  const std::vector<CheckpointFile> files = list_checkpoints(prefix);
  if (files.empty()) {
    log("no checkpoint matching '" + prefix + "<epoch>.nc'; starting afresh");
    return "";
  }
  std::vector<std::string> problems;
  int64_t chosen = -1;
  for (size_t i = 0; i < files.size() && chosen < 0; ++i) {
    try {
      checkpoint = read_network_file(files[i].path);
      if (!checkpoint.training.present)
        throw DataError(files[i].path + ": has no training state (not written by nn-train)");
      chosen = int64_t(i);
    } catch (const DataError& e) {
      problems.push_back(e.what());
    } catch (const IoError& e) {
      problems.push_back(e.what());
    }
  }
  std::shared_ptr<Communicator> comm = world_communicator();
  if (comm->size() > 1) {
    int64_t low = chosen, high = chosen;
    comm->all_reduce_min(&low, 1);
    comm->all_reduce_max(&high, 1);
    if (low != high)
      throw DataError("--resume: the processes read different checkpoints of '" + prefix +
                      "' (do they all see the same files?)");
  }
  if (chosen < 0) {
    std::string list;
    for (const std::string& p : problems) list += "\n  " + p;
    throw DataError("--resume: none of the " + std::to_string(files.size()) +
                    " checkpoint(s) of '" + prefix + "' reads back whole:" + list);
  }
  for (const std::string& p : problems) log("--resume: skipped the newer checkpoint " + p);
  net.load_arrays(checkpoint);
  log("resuming from " + files[size_t(chosen)].path);
  return files[size_t(chosen)].path;
}

// --warm-start (api/warm_start_stage.h); a resumed run continues its checkpoint (which began
// from the warm start) instead.
void warm_start_stage(const TrainJob& job, bool resumed, Network& net, Communicator& comm,
                      const LogSink& log) {
  if (job.warm_start.empty()) return;
  if (resumed) {
    log("--warm-start " + job.warm_start + ": not applied; the run continues its checkpoint");
    return;
  }
  if (job.solver == "LeastSquares")
    throw ArgumentError("--warm-start " + job.warm_start +
                        ": the LeastSquares solver computes the weights in closed form from the "
                        "data alone; warm starts are for gradient training (Solver \"Gradient\")");
  apply_warm_start(job.warm_start, optimizer_kind(job.optimizer), net, comm, log);
}

// The checkpoints of stopped runs that the finished run's result supersedes (rank 0).
void remove_stop_checkpoints(const TrainOptions& options, uint64_t epoch, const LogSink& log) {
  std::error_code ec;
  for (const CheckpointFile& f : list_checkpoints(state_prefix(options)))
    if (f.batch > 0 && f.epoch < epoch && std::filesystem::remove(f.path, ec))
      log("removed " + f.path + " (a stopped run's checkpoint; the run has finished)");
}

std::string seconds_since(std::chrono::steady_clock::time_point start) {
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", secs);
  return buf;
}

// The files training writes must not replace the ones it reads (checked before either).
void check_training_files(const TrainJob& job) {
  std::vector<NamedFile> inputs = {{"network_json", job.network_json}};
  for (const std::string& f : job.data_files) inputs.push_back({"data_files", f});
  for (const std::string& f : job.validation_files) inputs.push_back({"validation_files", f});
  std::vector<NamedFile> outputs = {{"results", job.results}};
  if (job.epoch_log) {
    outputs.push_back({"the per-epoch log", beside_results(job.results, ".epochs.jsonl")});
    outputs.push_back({"the loss curve", beside_results(job.results, ".curve.png")});
  }
  outputs.push_back({"trace", job.trace});
  if (!job.tensorboard.empty())
    outputs.push_back({"the TensorBoard file", TensorBoardLog::path_in(job.tensorboard)});
  check_distinct_files(outputs, inputs);
}

}  // namespace

void run_scaling_plan(const TrainJob& job, int ranks, const std::string& link_name,
                      const LogSink& log, uint32_t profile_steps, const std::string& device,
                      double device_step_ms) {
  if (ranks < 1) throw ArgumentError("--plan: the number of ranks must be at least 1");
  const std::string name = !link_name.empty()  ? link_name
                           : !job.link.empty() ? job.link
                                               : "eth-10g";
  LinkModel link;
  try {
    link = resolve_link(name);
  } catch (const ConfigError& e) {
    throw ArgumentError(std::string("--link: ") + e.what());
  }
  if (world_size() > 1)
    throw ConfigError("--plan predicts from one process; run it without mpirun");
  auto model = load_model(job, log, /*split_layers=*/false, /*may_stream=*/false);
  TrainOptions options = train_options(job);
  apply_network_settings(model->spec, job.shuffle, options);
  // The timed steps write nothing: no checkpoints, no state saved on a stop.
  options.checkpoint_name.clear();
  options.checkpoint_interval = 0;
  options.stop_checkpoint_name.clear();
  options.progress_seconds = 0;
  std::shared_ptr<Communicator> comm = world_communicator();
  TrainingLoop trainer(*model->net, model->bound, options, null_log(), comm.get());
  ParallelSettings settings = parallel_settings(job, *model, false).settings;
  settings.ranks = ranks;
  if (device_step_ms < 0)
    throw ArgumentError("--plan-step-ms: a measured step time must be positive");
  if (device_step_ms > 0 && device.empty())
    throw ArgumentError("--plan-step-ms gives a --plan-device's measured step: name the device");
  if (profile_steps > 0 && device.empty())
    log("plan: timing " + std::to_string(profile_steps) + " training steps (after 3 untimed) on " +
        std::to_string(job.threads > 0 ? job.threads : default_thread_count()) +
        " thread(s); ranks that will share a host's CPUs each get fewer: give --threads as "
        "they will have");
  TrainingLoop::PlanRun how;
  how.steps = profile_steps;
  if (!device.empty()) {
    try {
      how.device = device_preset(device);
    } catch (const ConfigError& e) {
      throw ArgumentError(std::string("--plan-device: ") + e.what());
    }
    how.steps = 0;
    how.device_step_s = device_step_ms * 1e-3;
  }
  const std::vector<std::string> lines = trainer.scaling_report(settings, link, how);
  for (const std::string& line : lines) log(line);
}

void measure_link(const std::string& path, const LogSink& log, uint64_t max_bytes) {
  std::shared_ptr<Communicator> comm = world_communicator();
  const int ranks = comm->size();
  if (ranks < 2)
    throw ArgumentError(
        "--measure-link times the collectives between the ranks of a job: start it with mpirun "
        "-np N (N >= 2)");
  LinkTiming timing;
  // Larger messages than the default's largest, 8-fold apart, then the maximum itself: Open
  // MPI may change algorithm, and a link its rate, with the size (docs/scaling.md).
  if (double(max_bytes) > timing.sizes.back()) {
    for (double s = timing.sizes.back() * 8.0; s < double(max_bytes); s *= 8.0)
      timing.sizes.push_back(s);
    timing.sizes.push_back(double(max_bytes));
  }
  if (comm->rank() == 0)
    log("measuring the link between " + std::to_string(ranks) +
        " ranks: all_reduce, all_gather and reduce_scatter of 64 B to " +
        format_bytes(uint64_t(timing.sizes.back())));
  LinkFile file;
  file.samples = time_collectives(*comm, timing);
  const LinkModel fit = fit_link(file.samples, ranks);
  file.latency_s = fit.latency_s;
  file.bytes_per_s = fit.bytes_per_s;
  file.ranks = ranks;
  file.source = format("measured by nn-train --measure-link between %d ranks (", ranks) +
                comm->name() + "), " + fit.source;
  if (comm->rank() != 0) return;
  for (const LinkSample& s : file.samples) {
    const double hops = (s.op == "all_reduce" ? 2.0 : 1.0) * (ranks - 1.0);
    const double model = hops * fit.latency_s + hops / ranks * s.bytes / fit.bytes_per_s;
    log(format("  %-14s %12.0f bytes %10.3f ms (fit %.3f ms)", s.op.c_str(), s.bytes,
               s.seconds * 1e3, model * 1e3));
  }
  write_link_file(path, file);
  log(format("link: %.1f us per hop, %.3g GB/s bus bandwidth; written to ", fit.latency_s * 1e6,
             fit.bytes_per_s / 1e9) +
      path + " (give it to --link)");
}

std::shared_ptr<Model> run_training(const TrainJob& job, const LogSink& log,
                                    const EpochCallback& on_epoch, const StepCallback& on_step) {
  const auto start = std::chrono::steady_clock::now();
  check_training_files(job);
  // Closed-form training needs the datasets in memory.
  auto model = load_model(job, log, /*split_layers=*/true,
                          /*may_stream=*/job.solver != "LeastSquares");
  Network& net = *model->net;
  TrainOptions options = train_options(job);
  apply_network_settings(model->spec, job.shuffle, options);
  // For measurements: NN_GRADIENT_OVERLAP=0 reduces gradients only after the backward pass.
  if (const char* v = std::getenv("NN_GRADIENT_OVERLAP")) options.reduction.overlap = *v != '0';
  // A run without checkpoints that is stopped saves its state beside the results.
  if (options.checkpoint_name.empty())
    options.stop_checkpoint_name = beside_results(job.results, "");
  std::shared_ptr<Communicator> comm = world_communicator();
  if (comm->rank() == 0) remove_stale_outputs(job, options, log);
  NetworkFile checkpoint;
  const std::string resumed_from = resume_from_checkpoint(job, options, net, checkpoint, log);
  const bool resumed = !resumed_from.empty();
  if (resumed) options.seed = checkpoint.training.seed;
  warm_start_stage(job, resumed, net, *comm, log);

  // Under mpirun every rank trains on its slice of each minibatch (train/data_parallel.h);
  // only rank 0 writes the result and checkpoints.
  std::unique_ptr<Profiler> profiler;  // outlives the trainer, which holds it
  TrainingLoop trainer(net, model->bound, options, log, comm.get());
  trainer.on_step = on_step;
  if (job.profile || !job.trace.empty()) {
    ProfilerOptions settings;
    settings.trace = !job.trace.empty();
    settings.trace_steps = job.trace_steps;
    profiler = std::make_unique<Profiler>(net.backend().make_profile_clock(), settings);
    trainer.set_profiler(profiler.get(), {job.profile, job.trace});
  }
  if (model->streamed) {
    StreamSettings settings;
    settings.memory = memory_budget() / uint64_t(std::max(ranks_on_this_host(), 1));
    settings.chunk = job.stream_chunk;
    settings.window_chunks = job.stream_window_chunks;
    if (model->sharded) {  // one window holding the file: the in-memory order
      settings.window_chunks = 64;
      settings.chunk = std::max<uint64_t>(1, (model->bound.examples + 63) / 64);
    }
    trainer.set_stream(std::make_unique<ExampleStream>(sources_for(model->bound, *model->streamed),
                                                       model->bound, options.minibatch, settings));
  }
  if (resumed) trainer.restore(checkpoint.training, resumed_from);
  if (model->validation.examples > 0)
    trainer.set_validation(model->validation,
                           model->validation_streamed
                               ? sources_for(model->validation, *model->validation_streamed)
                               : std::vector<StreamSource>{});
  log("model '" + (model->spec.name.empty() ? job.network_json : model->spec.name) + "':");
  for (const auto& line : format_summary(summarize(net), net.max_batch())) log(line);

  // The per-epoch log and the TensorBoard file are written as epochs end (rank 0's alone); a
  // resumed run continues them from the epoch of its checkpoint.
  const std::string log_path = beside_results(job.results, ".epochs.jsonl");
  std::unique_ptr<EpochLog> epoch_log;
  if (comm->rank() == 0 && job.epoch_log)
    epoch_log = std::make_unique<EpochLog>(log_path, resumed, trainer.epoch());
  std::unique_ptr<TensorBoardLog> tensorboard;
  if (comm->rank() == 0 && !job.tensorboard.empty()) {
    const TensorBoardResume at{trainer.epoch(), trainer.step()};
    tensorboard = std::make_unique<TensorBoardLog>(
        job.tensorboard, hyper_parameters(options, model->spec), resumed ? &at : nullptr, log);
    log("tensorboard: " + tensorboard->path() + " (view it with: tensorboard --logdir " +
        job.tensorboard + ")");
    trainer.on_minibatch = [&](const MinibatchReport& m) { tensorboard->write_minibatch(m); };
  }
  trainer.on_epoch = [&](const EpochReport& r) {
    if (epoch_log) epoch_log->write(r);
    if (tensorboard) tensorboard->write_epoch(r);
    if (on_epoch) trainer.sync_weights();  // the callback may read the model
    if (on_epoch && !on_epoch(epoch_stats(r))) throw StopRequested{};
  };
  if (trainer.epoch() >= options.epochs)
    log("already trained for " + std::to_string(trainer.epoch()) + " epochs; nothing to do");
  std::string last_checkpoint = resumed_from;
  nn::note_checkpoint(resumed_from);  // named if a lost rank ends the job (distributed/process.h)
  trainer.on_checkpoint = [&](const std::string& path) {
    last_checkpoint = path;
    nn::note_checkpoint(path);
  };
  try {
    trainer.run();
  } catch (const StopRequested&) {
  } catch (const DivergenceError& e) {
    if (tensorboard) {
      try {
        tensorboard->finish(/*success=*/false);
      } catch (const IoError&) {  // the divergence is the error to report
      }
    }
    throw DivergenceError(with_checkpoint_note(e.what(), last_checkpoint));
  }
  if (const int signal = trainer.stopped()) {
    // No result: the state is in the checkpoint, which --resume continues from.
    const std::string& saved = trainer.stop_checkpoint();
    throw Interrupted("stopped by " + signal_name(signal) + " " + trainer.stop_position() +
                          (saved.empty() ? std::string("; nothing was saved")
                                         : "; the training state is in " + saved),
                      signal, saved);
  }
  {
    // Collective with model-parallel layers; the arrays are read in place (no second copy).
    const NetworkFile result = trainer.snapshot_view();
    if (comm->rank() == 0) write_network_file(job.results, result);
  }
  if (tensorboard) tensorboard->finish(/*success=*/true);
  if (comm->rank() == 0) remove_stop_checkpoints(options, trainer.epoch(), log);
  log("wrote " +
      (job.results == "-" ? std::string("the network to standard output") : job.results) +
      " (total " + seconds_since(start) + " s)" +
      (job.epoch_log ? "; per-epoch log " + log_path : std::string()));
  if (comm->rank() == 0 && job.epoch_log)
    plot_epoch_log(log_path, beside_results(job.results, ".curve.png"), log);
  return model->model;
}

GradientCheckResult run_gradient_check(const TrainJob& job, const GradientCheckSettings& settings,
                                       const LogSink& log) {
  // The check takes one minibatch: the data are read whole.
  auto model = load_model(job, log, /*split_layers=*/false, /*may_stream=*/false);
  Network& net = *model->net;  // initialised with job.seed by load_model
  GradientCheckOptions check;
  check.epsilon = settings.epsilon;
  check.central = settings.central;
  check.abs_tolerance = settings.abs_tolerance;
  check.rel_tolerance = settings.rel_tolerance;
  check.noise_factor = settings.noise_factor;
  check.max_entries = settings.max_entries;
  check.seed = job.seed;
  const HostBatch batch = first_batch(model->bound, job.minibatch);
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
  GradientCheckResult result;
  result.arrays = report.parameters.size();
  for (const auto& p : report.parameters)
    if (!p.passed()) result.failed.push_back(p.name);
  if (result.passed())
    log("gradient check passed: " + std::to_string(result.arrays) + " weight and bias arrays");
  return result;
}

}  // namespace nn::api
