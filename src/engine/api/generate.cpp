// The public DatasetGenerator (include/nn/generate.h): text examples read by the engine's reader
// (data/text_examples.h), written as a dataset file (io/netcdf_dataset.h) together with the
// index files.
#include "nn/generate.h"

#include <filesystem>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/file_identity.h"
#include "data/text_examples.h"
#include "io/netcdf_dataset.h"

namespace nn::api {
namespace {

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace

struct DatasetGenerator::Impl {
  GenerateJob job;
  FeatureIndex features, samples;
};

DatasetGenerator::DatasetGenerator(GenerateJob job) : impl_(std::make_unique<Impl>()) {
  impl_->job = std::move(job);
  const GenerateJob& j = impl_->job;
  // Before anything is read or written: the three outputs need three files, and none may be
  // the input. (The feature index is an output even when it is only read: another output
  // written over it would destroy it.)
  check_distinct_files({{"output", j.output}, {"features", j.features}, {"samples", j.samples}},
                       {{"input", j.input}});
  // Feature index: new (create), extended (merge) or fixed (unknown features are dropped).
  if (!j.create_features) {
    if (!file_exists(j.features))
      throw DataError(j.features + ": feature index not found (use -c to create one)");
    impl_->features = load_index(j.features);
  }
  if (file_exists(j.samples)) impl_->samples = load_index(j.samples);
}

DatasetGenerator::~DatasetGenerator() = default;

GenerateReport DatasetGenerator::generate() {
  const GenerateJob& j = impl_->job;
  FeatureIndex& features = impl_->features;
  FeatureIndex& samples = impl_->samples;
  const uint64_t old_features = features.size();
  TextExamplesOptions opt;
  opt.mode = j.analog ? ExampleMode::Analog : ExampleMode::Indicator;
  opt.allow_new_features = j.create_features || j.merge_features;
  opt.width_align = j.align;
  // A sample on two lines or a feature with a blank means the file is in another format:
  // stop instead of keeping the last line per sample or a feature named "dune alien".
  opt.strict = true;
  opt.rows = j.rows;
  opt.skip_header = j.header;
  TextExamplesStats stats;
  ExampleSet ds = read_text_examples({j.input}, j.dataset, features, samples, opt, &stats);
  if (ds.examples == 0)
    throw DataError(j.input + (j.rows ? ": no rows found (expected \"sample,feature[,value]\")"
                                      : ": no examples found (expected lines "
                                        "\"sample<TAB>feature[,value]:feature...\"; "
                                        "--rows reads one sample,feature[,value] row per line)"));

  // The dataset and the index files are one unit: all are written in full before any replaces
  // its target, so a failure (full disk, no permission) leaves the previous set as it was.
  // Index files are rewritten only when labels were added, as generateNetCDF does; a created
  // feature index replaces the old one even when this input has no features at all.
  std::vector<std::unique_ptr<AtomicFile>> outputs;
  outputs.push_back(std::make_unique<AtomicFile>(j.output));
  write_datasets(*outputs.back(), {ds});
  if (features.changed() || j.create_features) {
    outputs.push_back(std::make_unique<AtomicFile>(j.features));
    outputs.back()->write(format_index(j.features, features));
  }
  if (samples.changed()) {
    outputs.push_back(std::make_unique<AtomicFile>(j.samples));
    outputs.back()->write(format_index(j.samples, samples));
  }
  std::vector<AtomicFile*> unit;
  for (auto& f : outputs) unit.push_back(f.get());
  commit_all(unit);

  GenerateReport r;
  r.samples = stats.samples;
  r.entries = stats.entries;
  r.features = features.size();
  r.new_features = features.size() - old_features;
  r.width = ds.width;
  r.dropped_features = stats.dropped_features;
  r.skipped_lines = stats.skipped_lines;
  r.extra_values = stats.extra_values;
  r.extra_columns = stats.extra_columns;
  return r;
}

}  // namespace nn::api
