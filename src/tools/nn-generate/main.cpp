// nn-generate: text examples (sample<TAB>feature[,value]:...) -> NetCDF dataset plus feature and
// sample index files. Accepts DSSTNE generateNetCDF's flags (utils/NetCDFGenerator.cpp; the
// output is described in docs/file-formats.md, "Files from generateNetCDF"). The flags become a
// GenerateJob (nn/generate.h); the library converts.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli_support.h"
#include "common/tool_main.h"
#include "nn/file_names.h"
#include "nn/generate.h"

const char* const nn::tool::kToolName = "nn-generate";

namespace {

struct Options {
  std::string dataset, input, output, features, samples, type = "indicator";
  bool create_features = false, merge_features = false, rows = false, header = false, quiet = false;
  uint32_t align = 128;
  uint64_t buffer_mib = 64, chunk = 0;
  int deflate = 0;
};

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
  app.add_option("--buffer", o.buffer_mib,
                 "MiB of arrays held while writing (default 64); the input is read twice and "
                 "memory holds the index files plus this, not the data")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 20));
  app.add_option("--chunk", o.chunk,
                 "store the arrays in NetCDF-4 chunks of N entries (default: contiguous, as "
                 "DSSTNE; 1048576 with --deflate)")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 28));
  app.add_option("--deflate", o.deflate,
                 "compress the arrays with deflate at level 1..9 (chunked; every netCDF-4 "
                 "reader reads it, slower to write)")
      ->check(CLI::Range(1, 9));
}

nn::api::GenerateJob make_job(const Options& o) {
  nn::api::GenerateJob job;
  job.dataset = o.dataset;
  job.input = o.input;
  job.output = o.output;
  job.features = o.features;
  job.samples = o.samples;
  job.create_features = o.create_features;
  job.merge_features = o.merge_features;
  job.analog = o.type == "analog";
  job.rows = o.rows;
  job.header = o.header;
  job.align = o.align;
  job.buffer_bytes = o.buffer_mib << 20;
  job.chunk_entries = o.chunk;
  job.deflate_level = o.deflate;
  return job;
}

std::string summary(const Options& o, const nn::api::GenerateReport& st, double seconds) {
  std::string s = "wrote " + (o.output == "-" ? std::string("standard output") : o.output) +
                  ": dataset \"" + o.dataset + "\" (" + o.type + "), " +
                  std::to_string(st.samples) + " samples, " + std::to_string(st.features) +
                  " features (" + std::to_string(st.new_features) + " new), " +
                  std::to_string(st.entries) + " non-zeros, width " + std::to_string(st.width);
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
  if (api::world_rank() != 0) return 0;
  // Nothing is read or written when two outputs, or an output and the input, are one file.
  api::check_distinct_files({{"-o", o.output}, {"-f", o.features}, {"-s", o.samples}},
                            {{"-i", o.input}});
  // The index files are loaded first: a missing feature index is reported before a usage slip.
  api::DatasetGenerator generator(make_job(o));
  if (o.header && !o.rows) throw UsageError("--header needs --rows");
  const api::GenerateReport report = generator.generate();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!o.quiet) std::fprintf(stderr, "%s: %s\n", kToolName, summary(o, report, seconds).c_str());
  return 0;
}
