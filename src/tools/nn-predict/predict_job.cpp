// Executes a PredictJob: loads the network and the examples, runs the forward pass in
// minibatches, and writes recommendation lines, reports and layer dumps.
#include "nn-predict/predict_job.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>

#include "api/model_impl.h"
#include "backend/backend.h"
#include "backend/backend_choice.h"
#include "config/parse.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "core/nearest_name.h"
#include "io/netcdf_dataset.h"
#include "data/text_examples.h"
#include "distributed/device_placement.h"
#include "distributed/process.h"
#include "model/binding.h"
#include "predict/classifier_report.h"
#include "predict/predictor.h"
#include "io/network_file.h"
#include "nn-predict/layer_dump.h"
#include "nn-predict/output_file.h"
#include "nn-predict/sample_filter.h"

namespace nn::tool {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

std::string printf_format(std::string f) {
  if (f.empty()) f = "%.3f";
  if (f[0] != '%') f = "%" + f;  // DSSTNE's -p takes the conversion without '%' (4.3f)
  if (!valid_score_format(f))
    throw ConfigError("score format '" + f +
                      "': expected one floating-point conversion like %.3f or 4.3f");
  return f;
}

// "A, B, C" plus " (did you mean 'B'?)" when `wanted` is near one of the names.
std::string layer_names(const NetworkSpec& spec, const std::string& wanted = "") {
  std::string names;
  std::vector<std::string> list;
  for (const auto& l : spec.layers) {
    names += (names.empty() ? "" : ", ") + l.name;
    list.push_back(l.name);
  }
  return names + (wanted.empty() ? std::string() : did_you_mean(wanted, list));
}

// The layer to score: the one requested, else the network's output layer.
std::string scored_layer(const PredictJob& job, const NetworkSpec& spec) {
  if (!job.layer.empty()) {
    if (!spec.find_layer(job.layer))
      throw ConfigError(job.network + ": layer '" + job.layer +
                        "' (-l) not found; layers are: " + layer_names(spec, job.layer));
    return job.layer;
  }
  for (const auto& l : spec.layers)
    if (l.kind == LayerKind::Output) return l.name;
  throw ConfigError(job.network + ": network has no Output layer; name the layer to score with -l");
}

// Inputs from text examples (converted in memory with the input feature index).
ExampleSet read_text_input(const PredictJob& job, const NetworkSpec& spec, FeatureIndex& samples,
                        const LogSink& log) {
  if (job.input_index.empty())
    throw ConfigError("text input " + job.text_input + " needs the input feature index (-i)");
  FeatureIndex features = load_index(job.input_index);
  std::vector<const LayerSpec*> ins;
  for (const auto& l : spec.layers)
    if (l.kind == LayerKind::Input) ins.push_back(&l);
  if (ins.size() != 1)
    throw ConfigError(job.network + ": text input needs a network with exactly one input layer");
  TextExamplesOptions opt;
  opt.mode = job.text_analog ? ExampleMode::Analog : ExampleMode::Indicator;
  opt.allow_new_features = false;
  opt.width_align = 1;
  opt.min_width = static_cast<uint32_t>(ins[0]->units());
  TextExamplesStats stats;
  const std::string name = job.dataset_base.empty() ? ins[0]->dataset : job.dataset_base + "_input";
  if (name != ins[0]->dataset)
    throw ConfigError("-d " + job.dataset_base + ": dataset '" + name +
                      "' does not match the network's input DataSet '" + ins[0]->dataset + "'");
  ExampleSet ds = read_text_examples({job.text_input}, name, features, samples, opt, &stats);
  log("read " + std::to_string(stats.samples) + " samples from " + job.text_input +
      (stats.dropped_features ? " (" + std::to_string(stats.dropped_features) +
                                    " features not in the index were ignored)"
                              : std::string()));
  return ds;
}

// The held-out dataset for metrics: the one named like the scored layer's DataSet, or the only
// one in the file.
const ExampleSet* pick_target(const std::vector<ExampleSet>& sets, const std::string& want,
                           const std::string& file) {
  for (const auto& s : sets)
    if (s.name == want) return &s;
  if (sets.size() == 1) return &sets[0];
  std::string names;
  for (const auto& s : sets) names += (names.empty() ? "" : ", ") + s.name;
  throw ConfigError(file + ": no dataset named '" + want +
                    "' (the scored layer's DataSet); it holds " + names);
}

// True when the file's first non-blank byte opens a JSON object.
bool starts_like_json(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  int c = 0;
  while ((c = std::fgetc(f)) != EOF && std::isspace(c)) {
  }
  std::fclose(f);
  return c == '{';
}

// Reads the network, telling the user when the file is a dataset rather than a network.
NetworkFile read_network(const std::string& path) {
  try {
    return read_network_file(path);
  } catch (const DataError&) {
    if (starts_like_json(path))
      throw DataError(path +
                      ": not a NetCDF file: this looks like a network JSON description (or a "
                      "command file), not a trained network file; -n (CDL Network with Command "
                      "Predict) expects the .nc that nn-train wrote from it");
    bool is_dataset = false;
    try {
      is_dataset = !read_datasets(path).empty();
    } catch (const Error&) {
      // Not a dataset either: the network reader's message says what is wrong.
    }
    if (is_dataset)
      throw DataError(path +
                      ": is a dataset file, not a network file (-n expects the .nc that "
                      "nn-train wrote)");
    throw;
  }
}

}  // namespace

int run_predict_job(const PredictJob& requested, const LogSink& log) {
  PredictJob job = requested;  // -b and -k get capped by what the data needs
  const auto start = std::chrono::steady_clock::now();
  NetworkFile file = read_network(job.network);
  NetworkSpec& spec = file.spec;
  if (spec.source.empty()) spec.source = job.network;

  // Inputs: either NetCDF datasets, or text examples converted in memory.
  std::vector<ExampleSet> sets;
  FeatureIndex samples;
  bool have_samples = false;
  std::string files;
  if (!job.text_input.empty()) {
    sets.push_back(read_text_input(job, spec, samples, log));
    have_samples = true;
    files = job.text_input;
  } else {
    for (const auto& f : job.data_files) {
      auto more = read_datasets(f);
      for (auto& s : more) sets.push_back(std::move(s));
      files += (files.empty() ? "" : ", ") + f;
    }
    if (!job.sample_index.empty()) {
      samples = load_index(job.sample_index);
      have_samples = true;
    }
  }
  const BoundData bound = bind_datasets(spec, sets, /*need_outputs=*/false, files);
  // Rows of a dataset file are its samples in ascending index order, so a sample index names
  // them only when it lists exactly that many samples. An index reused from a larger file
  // (nn-generate -s loads and extends it) would put other samples' names on the results.
  if (job.text_input.empty() && have_samples && samples.size() != bound.examples)
    throw DataError("--sample-index " + job.sample_index + " lists " +
                    std::to_string(samples.size()) + " samples but " + files + " has " +
                    std::to_string(bound.examples) +
                    " examples: it is not this file's index, and its names would label the "
                    "wrong rows. Give the index written with this file (nn-generate -s with a "
                    "new file name), or score the examples as text with -r");
  const std::string layer = scored_layer(job, spec);

  // Under mpirun a layer too large for one process (or marked "Parallel": "Model") is split
  // over the ranks (model/parallel_plan.h); prediction moves no gradients, so nothing else is.
  std::shared_ptr<Communicator> comm = world_communicator();
  NetworkParallel parallel;
  parallel.comm = comm.get();
  parallel.settings.minibatch = static_cast<uint32_t>(
      std::max<uint64_t>(1, std::min<uint64_t>(job.minibatch, bound.examples)));
  parallel.settings.training = false;
  parallel.settings.memory_budget = memory_budget() / uint64_t(std::max(ranks_on_this_host(), 1));
  // The library's Model owns the network (the same one api::Model::load builds), with input layers
  // of the kind of the data bound to them.
  std::string note;
  auto backend = make_backend_for(spec, job.backend, job.threads, job.device, &note);
  if (!note.empty()) log(note);
  // Which device each rank scores on (one process per GPU), printed by rank 0; collective.
  if (comm->size() > 1)
    for (const std::string& line : describe_placement(*comm, *backend, nullptr)) log(line);
  const std::shared_ptr<api::Model> model = api::Model::Impl::create(
      std::move(backend), spec, bound.sparse_inputs(), &file, 0, parallel);
  Network& net = *model->impl().net;
  const bool model_parallel = net.model_parallel();
  if (model_parallel)
    for (const LayerChoice& c : net.parallel_plan())
      if (c.model_parallel) log(describe(c));
  const uint32_t units = net.layer(layer).units();
  // A minibatch larger than the examples, or more recommendations than the layer has units,
  // would only cost memory (-b 4000000000 asked for 16 GB): cap both.
  if (job.k > units) {
    log("-k " + std::to_string(job.k) + " is more than layer '" + layer + "' has units; using " +
        std::to_string(units));
    job.k = units;
  }
  job.minibatch = static_cast<uint32_t>(
      std::max<uint64_t>(1, std::min<uint64_t>(job.minibatch, bound.examples)));
  // The network checks its activation memory for this minibatch against the budget
  // (Network::set_max_batch).

  // The output index and the filter describe the output layer's units; a hidden layer's units
  // are printed as numbers and never filtered.
  const bool scoring_output = net.layer(layer).kind() == LayerKind::Output;
  if (!scoring_output && (!job.output_index.empty() || !job.filter.empty()))
    log("layer '" + layer + "' is not an output layer: its units are numbered; the output index " +
        "and the filter are not applied");
  FeatureIndex items;
  const bool have_items = !job.output_index.empty() && scoring_output;
  if (have_items) items = load_index(job.output_index);
  const uint32_t valid_cols =
      have_items ? static_cast<uint32_t>(std::min<uint64_t>(items.size(), units)) : units;

  std::unordered_map<uint64_t, FilterRow> filter;
  if (!job.filter.empty() && scoring_output) {
    if (!have_samples || !have_items)
      throw ConfigError("filter " + job.filter + " needs the sample index and the output index");
    uint64_t skipped = 0;
    filter = load_sample_filter(job.filter, samples, items, &skipped);
    log("filter " + job.filter + ": " + std::to_string(filter.size()) + " samples" +
        (skipped ? ", " + std::to_string(skipped) + " unknown samples/items skipped"
                 : std::string()));
  }

  // Held-out truth: ranking metrics, or a classifier report when each example has one class.
  std::vector<ExampleSet> truth_sets;
  const ExampleSet* truth = nullptr;
  std::vector<int64_t> classes;
  bool classify = false;
  if (!job.target.empty()) {
    truth_sets = read_datasets(job.target);
    truth = pick_target(truth_sets, net.layer(layer).spec().dataset, job.target);
    if (truth->examples != bound.examples)
      throw DataError(job.target + ": dataset '" + truth->name + "' has " +
                      std::to_string(truth->examples) + " examples, but the input has " +
                      std::to_string(bound.examples));
    classify = job.classify || is_single_label(*truth);
    if (classify)
      classes = true_classes(*truth, units, job.target);
    else if (!truth->is_sparse())
      throw ConfigError(job.target + ": dataset '" + truth->name +
                        "': ranking metrics need a sparse target; use --classify for a dense "
                        "one (the largest value of each example is its class)");
  } else if (job.classify) {
    throw ConfigError("--classify needs a target dataset (--target or CDL Target)");
  }
  RankingMetrics metrics(job.k);
  ClassifierReport classifier(units, job.k);

  // Optional dump of one layer's activations.
  std::string dump_layer;
  Layer* dump_source = nullptr;
  if (!job.dump.empty()) {
    dump_layer = job.dump_layer.empty() ? layer : job.dump_layer;
    dump_source = net.find(dump_layer);
    if (!dump_source)
      throw ConfigError(job.network + ": --dump-layer '" + dump_layer +
                        "' not found; layers are: " + layer_names(spec, dump_layer));
    if (dump_source->has_sparse_output())
      throw ConfigError(job.network + ": --dump-layer '" + dump_layer +
                        "' is a sparse input layer; its activations are the input data");
  }

  // Under mpirun the ranks split the examples into contiguous ranges; rank 0 writes every line
  // in example order and the ranking metrics are summed, so the output is a single process's.
  // Layer dumps and classifier reports are produced by rank 0 alone.
  // With model-parallel layers every rank runs every example (each its slice of the split
  // layers); rank 0 merges the ranks' top-k candidates and writes.
  if (model_parallel && dump_source)
    throw ConfigError(
        "--dump is not supported when layers are split over processes (model "
        "parallel); run nn-predict with one process, or set \"Parallel\": \"Data\"");
  const bool split = comm->size() > 1 && !dump_source && !classify && !model_parallel;
  if (comm->size() > 1 && !split && !model_parallel && comm->rank() != 0) return 0;
  const bool writer = comm->rank() == 0;
  uint64_t begin = 0, end = bound.examples;
  if (split) {
    const uint64_t n = bound.examples, r = uint64_t(comm->rank()), p = uint64_t(comm->size());
    begin = n * r / p;
    end = n * (r + 1) / p;
  }
  std::string lines;  // this rank's recommendation lines (split mode)

  const std::string fmt = printf_format(job.score_format);
  auto sample_name = [&](uint64_t e) {
    return have_samples && e < samples.size() ? samples.label(e) : std::to_string(e);
  };
  // Outputs are created before the (long) scoring pass so an unwritable path fails early.
  std::unique_ptr<OutputFile> recs, top_classes;
  std::unique_ptr<LayerDump> dump;
  const bool want_lines = job.write_recs || !job.top_classes.empty();
  if (job.write_recs && writer) recs = std::make_unique<OutputFile>(job.output);
  if (!job.top_classes.empty() && writer)
    top_classes = std::make_unique<OutputFile>(job.top_classes);
  if (dump_source)
    dump = std::make_unique<LayerDump>(job.dump, dump_source->spec(), bound.examples);

  Predictor predictor(net, bound, job.minibatch, comm.get());
  TopK top;
  std::string line;
  char num[64];
  std::vector<uint32_t> truth_row;
  // One batch's top k (global unit numbers): recommendation lines and metrics.
  auto emit = [&](uint64_t first, uint32_t rows, const TopK& ranked_rows) {
    if (model_parallel && !writer) return;  // rank 0 writes the lines and the metrics
    for (uint32_t r = 0; r < rows; ++r) {
      const uint64_t e = first + r;
      const uint32_t* ranked = &ranked_rows.index[size_t(r) * job.k];
      if (want_lines) {
        line = sample_name(e);
        line += '\t';
        for (uint32_t j = 0; j < job.k && ranked[j] != kNone; ++j) {
          line += have_items ? items.label(ranked[j]) : std::to_string(ranked[j]);
          line += ',';
          std::snprintf(num, sizeof num, fmt.c_str(),
                        double(ranked_rows.score[size_t(r) * job.k + j]));
          line += num;
          line += ':';
        }
        line += '\n';
        if (split) {
          lines += line;
        } else {
          if (recs) recs->write(line);
          if (top_classes) top_classes->write(line);
        }
      }
      if (classify) {
        classifier.add(classes[e], ranked, job.k);
      } else if (truth) {
        sorted_items(*truth, e, truth_row);
        metrics.add(ranked, job.k, truth_row);
      }
    }
  };
  const bool ranking = want_lines || truth;
  if (!dump_source && ranking) {
    // Ranked on the backend: only k results per example leave it (Predictor::run_top_k). The
    // filter's lists are ascending, as top_k_filtered wants them.
    auto row_filter = [&](uint64_t e) {
      RowFilter f;
      auto it = filter.find(e);
      if (it == filter.end()) return f;
      if (job.filter_multiply) {
        f.scale_index = it->second.items.data();
        f.scale_value = it->second.values.data();
        f.scaled = it->second.items.size();
      } else {
        f.exclude = it->second.items.data();
        f.excluded = it->second.items.size();
      }
      return f;
    };
    predictor.run_top_k(layer, job.k, valid_cols, row_filter, emit, begin, end);
  } else {
    // Every score comes to the host: --dump writes them (one process, so every unit is here)
    // and the ranking, if any, runs on the host.
    std::vector<const std::vector<uint32_t>*> excluded;
    std::vector<float> scaled, dumped;
    predictor.run(
        layer,
        [&](uint64_t first, uint32_t rows, const float* scores_in) {
          if (dump) {
            const float* values = scores_in;
            if (dump_source != &net.layer(layer)) {
              dumped.resize(size_t(rows) * dump_source->units());
              net.backend().download(dumped.data(), dump_source->activations(),
                                     dumped.size() * sizeof(float));
              values = dumped.data();
            }
            dump->add(first, rows, values, sample_name);
          }
          if (!ranking) return;
          const float* scores = scores_in;
          excluded.assign(rows, nullptr);
          bool multiplied = false;
          for (uint32_t r = 0; r < rows; ++r) {
            auto it = filter.find(first + r);
            if (it == filter.end()) continue;
            if (!job.filter_multiply) {
              excluded[r] = &it->second.items;
              continue;
            }
            if (!multiplied) scaled.assign(scores_in, scores_in + size_t(rows) * units);
            multiplied = true;
            for (size_t j = 0; j < it->second.items.size(); ++j)
              if (it->second.items[j] < units)
                scaled[size_t(r) * units + it->second.items[j]] *= it->second.values[j];
          }
          if (multiplied) scores = scaled.data();
          top_k_rows(
              scores, rows, units, valid_cols, job.k, [&](uint32_t r) { return excluded[r]; }, top,
              job.threads);
          emit(first, rows, top);
        },
        begin, end);
  }
  if (split) {
    // Rank 0 receives every rank's lines, in rank (= example) order.
    std::vector<uint64_t> sizes(size_t(comm->size()));
    const uint64_t mine = lines.size();
    comm->all_gather(&mine, 1, sizes.data());
    std::string all;
    if (writer) {
      uint64_t total = 0;
      for (uint64_t z : sizes) total += z;
      all.resize(total);
    }
    std::vector<size_t> counts(sizes.begin(), sizes.end());
    comm->gather_v(lines.data(), writer ? &all[0] : nullptr, counts, 0);
    if (recs) recs->write(all);
    if (top_classes) top_classes->write(all);
    if (truth && !classify) {
      std::vector<double> sums = metrics.sums();
      comm->all_reduce_sum(sums.data(), sums.size());
      metrics = RankingMetrics(job.k);
      metrics.add_sums(sums);
    }
  }
  if (dump) dump->commit();
  if (top_classes) top_classes->commit();
  if (recs) recs->commit();

  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char buf[128];
  std::snprintf(buf, sizeof buf, "%.2f s (%.0f examples/s)", secs,
                double(bound.examples) / std::max(secs, 1e-9));
  if (recs || top_classes || truth)
    log("scored " + std::to_string(bound.examples) + " examples, top " + std::to_string(job.k) +
        " of layer '" + layer + "', " + buf);
  else
    log("ran " + std::to_string(bound.examples) + " examples through the network, " + buf);
  if (dump) log("wrote the activations of layer '" + dump_layer + "' to " + job.dump);
  if (classify) {
    for (const auto& l : classifier.format(have_items ? &items : nullptr)) log(l);
  } else if (truth) {
    log("metrics over " + std::to_string(metrics.examples()) +
        " examples with targets (k,precision,recall,ndcg):");
    for (uint32_t j = 1; j <= job.k; ++j) {
      std::snprintf(buf, sizeof buf, "%u,%6.4f,%6.4f,%6.4f", j, metrics.precision(j),
                    metrics.recall(j), metrics.ndcg(j));
      log(buf);
    }
  }
  return 0;
}

}  // namespace nn::tool
