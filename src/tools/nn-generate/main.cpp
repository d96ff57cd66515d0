// nn-generate: text examples (sample<TAB>feature[,value]:...) -> NetCDF dataset plus feature and
// sample index files. Accepts DSSTNE generateNetCDF's flags (utils/NetCDFGenerator.cpp; the
// output is described in docs/file-formats.md, "Files from generateNetCDF").
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "common/cli_support.h"
#include "common/tool_main.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "io/netcdf_dataset.h"
#include "data/text_examples.h"
#include "distributed/process.h"

const char* const nn::tool::kToolName = "nn-generate";

namespace {

struct Options {
  std::string dataset, input, output, features, samples, type = "indicator";
  bool create_features = false, merge_features = false, rows = false, header = false,
       quiet = false;
  uint32_t align = 128;
};

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

void define_flags(CLI::App& app, Options& o) {
  app.add_option("-d,--dataset", o.dataset, "dataset name stored in the file (name0)")->required();
  app.add_option("-i,--input", o.input,
                 "input text file, a directory of them, or - for standard input")
      ->required();
  app.add_flag("--rows", o.rows,
               "input has one row per entry, sample,feature[,value] (comma- or TAB-separated, "
               "e.g. MovieLens ratings.csv); rows are grouped per sample");
  app.add_flag("--header", o.header, "with --rows: the first line of each file is a header");
  app.add_option("-o,--output", o.output, "output NetCDF file (replaced), or - for standard output")
      ->required();
  app.add_option("-f,--features", o.features, "feature index file (label<TAB>index)")->required();
  app.add_option("-s,--samples", o.samples, "sample index file; loaded if it exists, else created")
      ->required();
  auto* create = app.add_flag("-c,--create-features", o.create_features,
                              "build a new feature index from this input (overwrites -f)");
  auto* merge = app.add_flag("-m,--merge-features", o.merge_features,
                             "load the feature index and add the new features to it");
  create->excludes(merge);
  app.add_option("-t,--type", o.type, "indicator (Boolean, default) or analog (float values)")
      ->check(CLI::IsMember({"indicator", "analog"}));
  app.add_flag("-q,--quiet", o.quiet, "print errors only");
  app.add_option("--align", o.align, "round the width up to a multiple of N (default 128)")
      ->check(CLI::Range(1u, 1u << 30));
}

std::string summary(const Options& o, const nn::ExampleSet& ds, const nn::TextExamplesStats& st,
                    uint64_t features, uint64_t new_features, double seconds) {
  std::string s = "wrote " + (o.output == "-" ? std::string("standard output") : o.output) +
                  ": dataset \"" + ds.name + "\" (" + o.type + "), " +
                  std::to_string(st.samples) + " samples, " + std::to_string(features) +
                  " features (" + std::to_string(new_features) + " new), " +
                  std::to_string(st.entries) + " non-zeros, width " + std::to_string(ds.width);
  if (st.dropped_features)
    s += ", " + std::to_string(st.dropped_features) + " unknown features dropped";
  if (st.skipped_lines)
    s += ", " + std::to_string(st.skipped_lines) + " lines without a TAB skipped";
  if (st.extra_values) s += ", " + std::to_string(st.extra_values) + " extra values ignored";
  if (st.extra_columns)
    s += ", " + std::to_string(st.extra_columns) + " rows with extra columns (ignored)";
  char secs[32];
  std::snprintf(secs, sizeof secs, ", %.2f s", seconds);
  return s + secs;
}

}  // namespace

int nn::tool::run(int argc, char** argv) {
  const auto t0 = std::chrono::steady_clock::now();
  CLI::App app{"Convert text examples (sample<TAB>feature[,value]:...) into a NetCDF dataset.",
               kToolName};
  Options o;
  define_flags(app, o);
  int status = 0;
  if (parse_or_exit(app, std::vector<std::string>(argv, argv + argc), status)) return status;
  // Under mpirun the conversion is not split: rank 0 does it; the others have nothing to do.
  if (world_rank() != 0) return 0;

  // Feature index: new (-c), extended (-m) or fixed (default: unknown features are dropped).
  FeatureIndex features;
  if (!o.create_features) {
    if (!file_exists(o.features))
      throw DataError(o.features + ": feature index not found (use -c to create one)");
    features = load_index(o.features);
  }
  FeatureIndex samples;
  if (file_exists(o.samples)) samples = load_index(o.samples);
  const uint64_t old_features = features.size();

  TextExamplesOptions opt;
  opt.mode = o.type == "analog" ? ExampleMode::Analog : ExampleMode::Indicator;
  opt.allow_new_features = o.create_features || o.merge_features;
  opt.width_align = o.align;
  // A sample on two lines or a feature with a blank means the file is in another format:
  // stop instead of keeping the last line per sample or a feature named "dune alien".
  opt.strict = true;
  if (o.header && !o.rows) throw UsageError("--header needs --rows");
  opt.rows = o.rows;
  opt.skip_header = o.header;
  TextExamplesStats stats;
  ExampleSet ds = read_text_examples({o.input}, o.dataset, features, samples, opt, &stats);
  if (ds.examples == 0)
    throw DataError(o.input + (o.rows ? ": no rows found (expected \"sample,feature[,value]\")"
                                      : ": no examples found (expected lines "
                                        "\"sample<TAB>feature[,value]:feature...\"; "
                                        "--rows reads one sample,feature[,value] row per line)"));

  // The dataset and the index files are one unit: all are written in full before any replaces
  // its target, so a failure (full disk, no permission) leaves the previous set as it was.
  // Index files are rewritten only when labels were added, as generateNetCDF does; -c replaces
  // the feature index even when this input has no features at all.
  std::vector<std::unique_ptr<AtomicFile>> outputs;
  outputs.push_back(std::make_unique<AtomicFile>(o.output));
  write_datasets(*outputs.back(), {ds});
  if (features.changed() || o.create_features) {
    outputs.push_back(std::make_unique<AtomicFile>(o.features));
    outputs.back()->write(format_index(o.features, features));
  }
  if (samples.changed()) {
    outputs.push_back(std::make_unique<AtomicFile>(o.samples));
    outputs.back()->write(format_index(o.samples, samples));
  }
  std::vector<AtomicFile*> unit;
  for (auto& f : outputs) unit.push_back(f.get());
  commit_all(unit);

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!o.quiet)
    std::fprintf(
        stderr, "%s: %s\n", kToolName,
        summary(o, ds, stats, features.size(), features.size() - old_features, seconds).c_str());
  return 0;
}
