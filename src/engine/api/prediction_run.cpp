// The public run_prediction() (include/nn/predict_job.h): a PredictionRun reads the network and
// the examples, builds the model (split over the ranks where the plan says so), prepares what
// the job asks for (item labels, filters, target, dump, outputs), runs the scoring pass, merges
// the ranks' results and reports. The pieces are the engine's (predict/*.h); this file puts
// them in order.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>

#include "api/model_impl.h"
#include "api/precision_stage.h"
#include "backend/backend_choice.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/file_identity.h"
#include "core/memory_budget.h"
#include "core/stop_request.h"
#include "distributed/device_placement.h"
#include "distributed/process.h"
#include "nn/predict_job.h"
#include "predict/blocked_top_k.h"
#include "predict/input_items.h"
#include "predict/layer_dump.h"
#include "predict/network_items.h"
#include "predict/output_file.h"
#include "predict/prediction_inputs.h"
#include "predict/prediction_target.h"
#include "predict/rank_merge.h"
#include "predict/recommendation_lines.h"
#include "predict/sample_filter.h"
#include "predict/scoring_pass.h"
#include "train/example_stream.h"

namespace nn::api {
namespace {

class PredictionRun {
 public:
  PredictionRun(const PredictJob& job, const LogSink& log)
      : job_(job), log_(log), start_(std::chrono::steady_clock::now()) {}

  PredictResult run() {
    // What a killed run of the same targets left (named temporary files; most have no name).
    for (const std::string* t : {&job_.output, &job_.top_classes, &job_.dump})
      if (!is_stdout_path(*t)) remove_stale_temp_files(*t);
    read();
    build_model();
    cap_sizes();
    load_items_and_filters();
    target_ = std::make_unique<PredictionTarget>(
        job_.target, job_.classify, scored().spec().dataset, examples(), units_, job_.k,
        scored().spec().features, job_.remap_index);
    apply_ranking_rule();
    choose_dump();
    if (!plan_ranks()) return result();  // a rank with nothing to do
    open_outputs();
    score();
    // A stop request (a signal) ends the run before any output is written; under mpirun the
    // tool then ends the whole job.
    throw_if_stop_requested("before writing the results; nothing was written");
    merge_and_commit();
    report();
    return result();
  }

 private:
  uint64_t examples() const { return inputs_.bound.examples; }
  Layer& scored() const { return net_->layer(layer_); }

  // The network and the examples; the layer to score.
  void read() {
    file_ = read_network_to_score(job_.network);
    if (file_.spec.source.empty()) file_.spec.source = job_.network;
    ExampleSource source;
    source.text = job_.text_input;
    source.input_index = job_.input_index;
    source.analog = job_.text_analog;
    source.dataset_base = job_.dataset_base;
    source.files = job_.data_files;
    source.sample_index = job_.sample_index;
    source.remap = job_.remap_index;
    if (job_.text_input.empty() && job_.stream != 0) streamed_ = open_for_streaming();
    inputs_ = read_examples(source, file_.spec, job_.network, log_,
                            streamed_ ? &streamed_->headers : nullptr);
    layer_ = scored_layer(job_.layer, file_.spec, job_.network);
  }

  // Under mpirun a layer too large for one process (or marked "Parallel": "Model") is split over
  // the ranks (model/parallel_plan.h); prediction moves no gradients, so nothing else is. The
  // library's Model owns the network (the one Model::load builds), with input layers of the kind
  // of the data bound to them.
  // The dataset files opened for streaming when asked (--stream) or when their examples do not
  // fit the memory budget whole; null: they are read whole.
  std::unique_ptr<StreamedFiles> open_for_streaming() {
    auto files = std::make_unique<StreamedFiles>(open_streamed_files(job_.data_files));
    uint64_t bytes = 0;
    for (const StreamSource& s : files->sources)
      bytes = checked_add(bytes, s.file->memory_bytes(s.dataset)).value_or(UINT64_MAX);
    const uint64_t budget = memory_budget() / uint64_t(std::max(ranks_on_this_host(), 1));
    if (job_.stream != 1 && bytes <= budget) return nullptr;
    log_("streaming the examples (" +
         (job_.stream == 1 ? std::string("asked for") : "they do not fit in memory") + ": " +
         format_bytes(bytes) + " whole, memory budget " + format_bytes(budget) +
         "): results are written as each segment is scored");
    return files;
  }

  void build_model() {
    comm_ = world_communicator();
    NetworkParallel parallel;
    parallel.comm = comm_.get();
    parallel.settings.minibatch = static_cast<uint32_t>(
        std::max<uint64_t>(1, std::min<uint64_t>(job_.minibatch, examples())));
    parallel.settings.training = false;
    parallel.settings.memory_budget = memory_budget() / uint64_t(std::max(ranks_on_this_host(), 1));
    std::string note;
    auto backend = make_backend_for(file_.spec, job_.backend, job_.threads,
                                    resolve_device(job_.device), &note);
    if (!note.empty()) log_(note);
    const Precision precision = resolve_precision(job_.precision, file_.spec);
    if (precision == Precision::BF16)
      backend->set_precision(Precision::BF16);  // refuses, saying why, where BF16 cannot run
    // Which device each rank scores on (one process per GPU), printed by rank 0; collective.
    if (comm_->size() > 1)
      for (const std::string& line : describe_placement(*comm_, *backend, nullptr)) log_(line);
    model_ = Model::Impl::create(std::move(backend), file_.spec, inputs_.bound.sparse_inputs(),
                                 &file_, 0, parallel);
    net_ = model_->impl().net.get();
    apply_precision_stage(precision, job_.force_precision, parallel.settings.minibatch, *net_,
                          *comm_, log_);
    model_parallel_ = net_->model_parallel();
    if (model_parallel_)
      for (const LayerChoice& c : net_->parallel_plan())
        if (c.model_parallel) log_(describe(c));
  }

  // A minibatch larger than the examples, or more results than the layer has units, would only
  // cost memory (-b 4000000000 asked for 16 GB): both are capped. The network checks its
  // activation memory for the minibatch against the budget (Network::set_max_batch).
  void cap_sizes() {
    units_ = scored().units();
    if (job_.k > units_) {
      log_("-k " + std::to_string(job_.k) + " is more than layer '" + layer_ +
           "' has units; using " + std::to_string(units_));
      job_.k = units_;
    }
    job_.minibatch = static_cast<uint32_t>(
        std::max<uint64_t>(1, std::min<uint64_t>(job_.minibatch, examples())));
  }

  // The output index and the filter describe the output layer's units; a hidden layer's units
  // are printed as numbers and never filtered.
  void load_items_and_filters() {
    const bool scoring_output = scored().kind() == LayerKind::Output;
    if (!scoring_output && (!job_.output_index.empty() || !job_.filter.empty()))
      log_("layer '" + layer_ + "' is not an output layer: its units are numbered; the output " +
           "index and the filter are not applied");
    if (scoring_output) {
      LayerItems items =
          layer_items(scored().spec(), ItemSource{job_.output_index, "-o", job_.remap_index});
      if (!items.note.empty()) log_(items.note);
      have_items_ = items.present;
      items_ = std::move(items.index);
    }
    valid_cols_ =
        have_items_ ? static_cast<uint32_t>(std::min<uint64_t>(items_.size(), units_)) : units_;
    if (job_.filter.empty() || !scoring_output) return;
    if (is_netcdf_path(job_.filter)) {  // a dataset: row e filters example e
      const std::string like =
          inputs_.bound.inputs.empty() ? std::string() : inputs_.bound.inputs.front().dataset->name;
      filters_ = load_dataset_filter(job_.filter, like, examples(), units_);
      log_("filter " + job_.filter + ": " + std::to_string(filters_.size()) +
           " examples, matched row by row");
      return;
    }
    if (!inputs_.have_samples || !have_items_)
      throw ConfigError(
          "filter " + job_.filter + " names samples and items, so it needs " +
          (inputs_.have_samples ? std::string() : "the sample index (--sample-index) and ") +
          "the output index (-o); a filter given as a dataset file (-f FILE.nc, as nn-generate "
          "writes them) is matched to the examples row by row and needs neither");
    uint64_t skipped = 0;
    filters_ = load_sample_filter(job_.filter, inputs_.samples, items_, &skipped);
    log_("filter " + job_.filter + ": " + std::to_string(filters_.size()) + " samples" +
         (skipped ? ", " + std::to_string(skipped) + " unknown samples/items skipped"
                  : std::string()));
  }

  // nn-train's validation rule (predict/input_items.h), so recall@K means one thing in both
  // tools: against a target, each example's input items are left out of its ranking when input
  // and output share their items, unless the job asks to rank them.
  void apply_ranking_rule() {
    if (!target_->present() || target_->classify()) return;
    const bool rank_inputs = job_.rank_input_items || scored().kind() != LayerKind::Output;
    ranking_rule_ = ranking_rule(inputs_.bound, target_->truth(), rank_inputs);
    if (const ExampleSet* in = input_items_left_out(inputs_.bound, target_->truth(), rank_inputs)) {
      if (streamed_)
        left_out_ = in;  // segment by segment, as they are read
      else
        leave_out_input_items(filters_, *in, 0, examples(), job_.filter_multiply);
      ranking_rule_ += " (--rank-input-items ranks them)";
    }
  }

  void choose_dump() {
    if (job_.dump.empty()) return;
    dump_layer_ = job_.dump_layer.empty() ? layer_ : job_.dump_layer;
    dump_source_ = &dump_source(*net_, file_.spec, dump_layer_, job_.network);
  }

  // Under mpirun the ranks split the examples into contiguous ranges; rank 0 writes every line
  // in example order and the ranking metrics are summed, so the output is a single process's.
  // Layer dumps and classifier reports are produced by rank 0 alone. With model-parallel layers
  // every rank runs every example (each its slice of the split layers); rank 0 merges the ranks'
  // top-k candidates and writes. Returns false on a rank that has nothing to do.
  bool plan_ranks() {
    if (model_parallel_ && dump_source_)
      throw ConfigError(
          "--dump is not supported when layers are split over processes (model "
          "parallel); run nn-predict with one process, or set \"Parallel\": \"Data\"");
    split_ = comm_->size() > 1 && !dump_source_ && !target_->classify() && !model_parallel_;
    if (comm_->size() > 1 && !split_ && !model_parallel_ && comm_->rank() != 0) return false;
    writer_ = comm_->rank() == 0;
    range_ =
        split_ ? rank_share(examples(), comm_->rank(), comm_->size()) : ExampleRange{0, examples()};
    return true;
  }

  // Outputs are created before the (long) scoring pass so an unwritable path fails early.
  void open_outputs() {
    score_format_ = printf_format(job_.score_format);
    want_lines_ = job_.write_recs || !job_.top_classes.empty();
    if (job_.write_recs && writer_) recs_ = std::make_unique<OutputFile>(job_.output);
    if (!job_.top_classes.empty() && writer_)
      top_classes_ = std::make_unique<OutputFile>(job_.top_classes);
    if (dump_source_)
      dump_ = std::make_unique<LayerDump>(job_.dump, dump_source_->spec(), examples());
  }

  void score() {
    auto sample_name = [this](uint64_t e) { return inputs_.sample_name(e); };
    RecommendationLines lines(job_.k, score_format_, have_items_ ? &items_ : nullptr, sample_name);
    // One batch's top k (global unit numbers): recommendation lines and metrics.
    auto emit = [&](uint64_t first, uint32_t rows, const TopK& top) {
      throw_if_stop_requested("while scoring; nothing was written");
      if (model_parallel_ && !writer_) return;  // rank 0 writes the lines and the metrics
      for (uint32_t r = 0; r < rows; ++r) {
        const uint32_t* ranked = &top.index[size_t(r) * job_.k];
        if (want_lines_) {
          const std::string& line = lines.line(first + r, ranked, &top.score[size_t(r) * job_.k]);
          if (split_) {
            rank_lines_ += line;
          } else {
            if (recs_) recs_->write(line);
            if (top_classes_) top_classes_->write(line);
          }
        }
        target_->add(first + r, ranked);
      }
    };
    ScoringPass pass;
    pass.layer = layer_;
    pass.k = job_.k;
    pass.units = units_;
    pass.valid_cols = valid_cols_;
    pass.filters = &filters_;
    pass.multiply = job_.filter_multiply;
    pass.rank = want_lines_ || target_->present();
    pass.dump = dump_.get();
    pass.dump_layer = dump_source_;
    pass.sample_name = sample_name;
    pass.threads = job_.threads;
    if (!streamed_) {
      Predictor predictor(*net_, inputs_.bound, job_.minibatch, comm_.get(), score_blocks());
      run_scoring_pass(predictor, *net_, pass, range_, emit);
      return;
    }
    score_segments(pass, emit);
  }

  // Streaming: the rank's examples a segment at a time (a whole number of minibatches, so the
  // batches are those of a whole read), each read, scored and its results written before the
  // next is read.
  void score_segments(ScoringPass& pass,
                      const std::function<void(uint64_t, uint32_t, const TopK&)>& emit) {
    double bytes_per_example = 0;
    for (const LayerData& d : inputs_.bound.inputs) {
      const StreamSource& s = streamed_->sources[size_t(d.dataset - inputs_.sets.data())];
      bytes_per_example += s.file->bytes_per_example(s.dataset);
    }
    const uint64_t budget = memory_budget() / uint64_t(std::max(ranks_on_this_host(), 1));
    const uint64_t wanted = job_.stream_segment
                                ? job_.stream_segment + job_.minibatch - 1
                                : uint64_t(double(budget) / 4.0 / std::max(bytes_per_example, 1.0));
    int64_t segment = std::max<int64_t>(1, int64_t(wanted / job_.minibatch));
    if (model_parallel_) comm_->all_reduce_min(&segment, 1);  // every rank runs every batch
    segment *= job_.minibatch;
    log_("streaming: segments of up to " + std::to_string(segment) + " examples (about " +
         format_bytes(uint64_t(double(segment) * bytes_per_example)) + ")");
    const ScoreBlocks blocks = score_blocks();
    for (uint64_t a = range_.begin; a < range_.end; a += uint64_t(segment)) {
      const uint64_t b = std::min(range_.end, a + uint64_t(segment));
      std::vector<uint64_t> ids(b - a);
      std::iota(ids.begin(), ids.end(), a);
      std::vector<ExampleSet> sets(inputs_.sets.size());
      std::vector<bool> read(inputs_.sets.size(), false);
      BoundData bound = inputs_.bound;
      bound.examples = b - a;
      for (LayerData& d : bound.inputs) {
        const size_t i = size_t(d.dataset - inputs_.sets.data());
        if (!read[i]) {
          sets[i] = streamed_->sources[i].file->read(streamed_->sources[i].dataset, ids);
          read[i] = true;
        }
        d.dataset = &sets[i];
      }
      if (left_out_)
        leave_out_input_items(filters_, sets[size_t(left_out_ - inputs_.sets.data())], 0, b - a,
                              job_.filter_multiply, a);
      Predictor predictor(*net_, bound, job_.minibatch, comm_.get(), blocks);
      pass.first_example = a;
      run_scoring_pass(predictor, *net_, pass, ExampleRange{0, b - a}, emit);
      // The segment's filters are done with (streamed data need not leave them all in memory).
      for (uint64_t e = a; e < b; ++e) filters_.erase(e);
    }
  }

  // Whether the ranked layer is scored in column blocks (predict/blocked_top_k.h): only when
  // rankings alone are wanted (a dump needs every score) and the layer allows it.
  ScoreBlocks score_blocks() {
    const int64_t setting = parse_score_block(job_.score_block);
    const bool rank_only = (want_lines_ || target_->present()) && !dump_;
    const uint32_t columns = score_block_columns(setting, job_.minibatch, units_);
    if (columns == 0 || !rank_only || model_parallel_) {
      if (setting > 0 && columns > 0)
        log_(
            "--score-block " + job_.score_block + ": layer '" + layer_ + "' scored whole (" +
            (model_parallel_ ? "its network is split over processes" : "a dump needs every score") +
            ")");
      return {};
    }
    const std::string why = blocked_scoring_obstacle(*net_, layer_);
    if (!why.empty()) {
      if (setting > 0)
        throw ArgumentError("--score-block " + job_.score_block + ": layer '" + layer_ +
                            "' cannot be scored in column blocks: " + why);
      log_("layer '" + layer_ + "' scored whole (" + std::to_string(units_) +
           " units): it cannot be scored in column blocks: " + why);
      return {};
    }
    log_("scoring layer '" + layer_ + "' in blocks of " + std::to_string(columns) + " of its " +
         std::to_string(units_) + " units (top " + std::to_string(job_.k) + " kept per block)");
    return ScoreBlocks{layer_, columns};
  }

  void merge_and_commit() {
    if (split_) {
      // Rank 0 receives every rank's lines, in rank (= example) order.
      const std::string all = gather_to_rank0(*comm_, rank_lines_);
      if (recs_) recs_->write(all);
      if (top_classes_) top_classes_->write(all);
      target_->sum_over_ranks(*comm_);
    }
    if (dump_) dump_->commit();
    if (top_classes_) top_classes_->commit();
    if (recs_) recs_->commit();
  }

  void report() {
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    char buf[128];
    std::snprintf(buf, sizeof buf, "%.2f s (%.0f examples/s)", secs,
                  double(examples()) / std::max(secs, 1e-9));
    if (recs_ || top_classes_ || target_->present())
      log_("scored " + std::to_string(examples()) + " examples, top " + std::to_string(job_.k) +
           " of layer '" + layer_ + "', " + buf);
    else
      log_("ran " + std::to_string(examples()) + " examples through the network, " + buf);
    if (dump_) log_("wrote the activations of layer '" + dump_layer_ + "' to " + job_.dump);
    if (!ranking_rule_.empty()) log_("ranking for the metrics: " + ranking_rule_);
    for (const std::string& line : target_->report(have_items_ ? &items_ : nullptr)) log_(line);
  }

  PredictResult result() const {
    PredictResult r;
    r.examples = examples();
    r.layer = layer_;
    r.k = job_.k;
    if (!target_ || !target_->present()) return r;
    if (target_->classify()) {
      r.classified = true;
      r.top1 = target_->classifier().top1();
      r.topk = target_->classifier().topk();
      return r;
    }
    const RankingMetrics& m = target_->metrics();
    r.evaluated = m.examples();
    for (uint32_t j = 1; j <= job_.k; ++j) {
      r.precision.push_back(m.precision(j));
      r.recall.push_back(m.recall(j));
      r.ndcg.push_back(m.ndcg(j));
    }
    return r;
  }

  PredictJob job_;  // -b and -k get capped by what the data needs
  const LogSink& log_;
  std::chrono::steady_clock::time_point start_;
  NetworkFile file_;
  PredictionInputs inputs_;
  std::unique_ptr<StreamedFiles> streamed_;  // streaming: the files (inputs_ holds headers)
  const ExampleSet* left_out_ = nullptr;     // streaming: input items left out, per segment
  std::string layer_;
  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<Model> model_;
  Network* net_ = nullptr;
  bool model_parallel_ = false;
  uint32_t units_ = 0, valid_cols_ = 0;
  FeatureIndex items_;
  bool have_items_ = false;
  SampleFilters filters_;
  std::unique_ptr<PredictionTarget> target_;
  std::string ranking_rule_;  // which items the metrics' rankings leave out, for the report
  std::string dump_layer_;
  Layer* dump_source_ = nullptr;
  bool split_ = false, writer_ = false, want_lines_ = false;
  ExampleRange range_;
  std::string score_format_;  // checked printf conversion
  std::unique_ptr<OutputFile> recs_, top_classes_;
  std::unique_ptr<LayerDump> dump_;
  std::string rank_lines_;  // this rank's recommendation lines (split mode)
};

}  // namespace

PredictResult run_prediction(const PredictJob& job, const LogSink& log) {
  // Before anything is read or written: each output needs a file of its own, and none may be
  // one of the inputs.
  std::vector<NamedFile> inputs = {{"network", job.network},
                                   {"text_input", job.text_input},
                                   {"input_index", job.input_index},
                                   {"output_index", job.output_index},
                                   {"sample_index", job.sample_index},
                                   {"filter", job.filter},
                                   {"target", job.target}};
  for (const std::string& f : job.data_files) inputs.push_back({"data_files", f});
  const std::string recs = is_stdout_path(job.output) ? std::string("-") : job.output;
  check_distinct_files({{"output", job.write_recs ? recs : std::string()},
                        {"top_classes", job.top_classes},
                        {"dump", job.dump}},
                       inputs);
  return PredictionRun(job, log).run();
}

}  // namespace nn::api
