// Executes a PredictJob.
#include "nn-predict/predict_job.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <unistd.h>

#include "backend/backend.h"
#include "core/error.h"
#include "data/netcdf_dataset.h"
#include "data/text_examples.h"
#include "model/binding.h"
#include "model/io/network_file.h"
#include "model/predictor.h"
#include "nn-predict/sample_filter.h"

namespace nn::tool {
namespace {

std::string printf_format(std::string f) {
  if (f.empty()) f = "%.3f";
  if (f[0] != '%') f = "%" + f;
  if (f.find('%', 1) != std::string::npos || f.find_first_of("eEfgG") == std::string::npos)
    throw ConfigError("score format '" + f + "': expected a float conversion like %.3f or 4.3f");
  return f;
}

// Output file written to a temporary name and renamed when complete (stdout is streamed).
class RecsWriter {
 public:
  explicit RecsWriter(const std::string& path) : path_(path) {
    if (path_.empty() || path_ == "-") {
      f_ = stdout;
      return;
    }
    tmp_ = path_ + ".tmp" + std::to_string(::getpid());
    f_ = std::fopen(tmp_.c_str(), "w");
    if (!f_) throw IoError(path_ + ": cannot create output file");
  }
  ~RecsWriter() {
    if (f_ && f_ != stdout) {
      std::fclose(f_);
      std::remove(tmp_.c_str());
    }
  }
  std::FILE* file() { return f_; }
  void commit() {
    if (f_ == stdout) {
      std::fflush(stdout);
      return;
    }
    const bool ok = std::fflush(f_) == 0 && std::ferror(f_) == 0;
    std::fclose(f_);
    f_ = nullptr;
    if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      std::remove(tmp_.c_str());
      throw IoError(path_ + ": cannot write output file");
    }
  }

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
};

std::string output_layer_name(const NetworkSpec& spec, const std::string& requested) {
  if (!requested.empty()) return requested;
  for (const auto& l : spec.layers)
    if (l.kind == LayerKind::Output) return l.name;
  throw ConfigError("network has no Output layer");
}

}  // namespace

int run_predict_job(const PredictJob& job, const LogSink& log) {
  const auto start = std::chrono::steady_clock::now();
  NetworkFile file = read_network_file(job.network);
  NetworkSpec& spec = file.spec;
  if (spec.source.empty()) spec.source = job.network;

  // Inputs: either NetCDF datasets, or text examples converted in memory.
  std::vector<DataSet> sets;
  FeatureIndex samples;
  bool have_samples = false;
  std::string files;
  if (!job.text_input.empty()) {
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
    sets.push_back(read_text_examples({job.text_input}, name, features, samples, opt, &stats));
    if (sets.back().name != ins[0]->dataset)
      throw ConfigError("-d " + job.dataset_base + ": dataset '" + name +
                        "' does not match the network's input DataSet '" + ins[0]->dataset + "'");
    have_samples = true;
    files = job.text_input;
    log("read " + std::to_string(stats.samples) + " samples from " + job.text_input +
        (stats.dropped_features ? " (" + std::to_string(stats.dropped_features) +
                                      " features not in the index were ignored)"
                                : std::string()));
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

  auto backend = make_backend(job.backend, job.threads);
  Network net(*backend, spec, bound.sparse_inputs());
  net.load_arrays(file);
  const std::string layer = output_layer_name(spec, job.layer);
  const uint32_t units = net.layer(layer).units();

  FeatureIndex items;
  const bool have_items = !job.output_index.empty();
  if (have_items) items = load_index(job.output_index);
  const uint32_t valid_cols = have_items ? static_cast<uint32_t>(std::min<uint64_t>(items.size(), units)) : units;

  std::unordered_map<uint64_t, FilterRow> filter;
  if (!job.filter.empty()) {
    if (!have_samples || !have_items)
      throw ConfigError("filter " + job.filter + " needs the sample index and the output index");
    uint64_t skipped = 0;
    filter = load_sample_filter(job.filter, samples, items, &skipped);
    log("filter " + job.filter + ": " + std::to_string(filter.size()) + " samples" +
        (skipped ? ", " + std::to_string(skipped) + " unknown samples/items skipped" : std::string()));
  }

  // Held-out truth for metrics.
  std::vector<DataSet> truth_sets;
  const DataSet* truth = nullptr;
  if (!job.target.empty()) {
    truth_sets = read_datasets(job.target);
    const std::string want = net.layer(layer).spec().dataset;
    for (const auto& s : truth_sets)
      if (s.name == want || truth_sets.size() == 1) truth = &s;
    if (!truth) throw ConfigError(job.target + ": no dataset named '" + want + "'");
    if (!truth->is_sparse()) throw ConfigError(job.target + ": metrics need a sparse target dataset");
    if (truth->examples != bound.examples)
      throw ConfigError(job.target + ": " + std::to_string(truth->examples) + " examples, but the input has " +
                        std::to_string(bound.examples));
  }
  RankingMetrics metrics(job.k);

  const std::string fmt = printf_format(job.score_format);
  RecsWriter out(job.output);
  Predictor predictor(net, bound, job.minibatch);
  TopK top;
  std::string line;
  char num[64];
  std::vector<uint32_t> truth_row;
  predictor.run(layer, [&](uint64_t first, uint32_t rows, const float* scores_in) {
    const float* scores = scores_in;
    std::vector<float> scaled;
    std::vector<std::vector<uint32_t>> excluded(rows);
    for (uint32_t r = 0; r < rows; ++r) {
      auto it = filter.find(first + r);
      if (it == filter.end()) continue;
      if (job.filter_multiply) {
        if (scaled.empty()) scaled.assign(scores_in, scores_in + size_t(rows) * units);
        for (size_t j = 0; j < it->second.items.size(); ++j)
          scaled[size_t(r) * units + it->second.items[j]] *= it->second.values[j];
      } else {
        excluded[r] = it->second.items;
      }
    }
    if (!scaled.empty()) scores = scaled.data();
    top_k_rows(scores, rows, units, valid_cols, job.k,
               [&](uint32_t r) { return excluded[r].empty() ? nullptr : &excluded[r]; }, top);
    for (uint32_t r = 0; r < rows; ++r) {
      const uint64_t e = first + r;
      line.clear();
      if (have_samples && e < samples.size()) line += samples.label(e);
      else line += std::to_string(e);
      line += '\t';
      for (uint32_t j = 0; j < job.k; ++j) {
        const uint32_t c = top.index[size_t(r) * job.k + j];
        if (c == std::numeric_limits<uint32_t>::max()) break;
        line += have_items ? items.label(c) : std::to_string(c);
        line += ',';
        std::snprintf(num, sizeof num, fmt.c_str(), double(top.score[size_t(r) * job.k + j]));
        line += num;
        line += ':';
      }
      line += '\n';
      std::fwrite(line.data(), 1, line.size(), out.file());
      if (truth) {
        const uint64_t u = truth->row(e);
        truth_row.assign(truth->sparse_index.begin() + truth->sparse_start[u],
                         truth->sparse_index.begin() + truth->sparse_end[u]);
        std::sort(truth_row.begin(), truth_row.end());
        truth_row.erase(std::unique(truth_row.begin(), truth_row.end()), truth_row.end());
        metrics.add(&top.index[size_t(r) * job.k], job.k, truth_row);
      }
    }
  });
  out.commit();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char buf[128];
  std::snprintf(buf, sizeof buf, "%.2f s (%.0f examples/s)", secs, double(bound.examples) / std::max(secs, 1e-9));
  log("scored " + std::to_string(bound.examples) + " examples, top " + std::to_string(job.k) +
      " of layer '" + layer + "', " + buf);
  if (truth) {
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
