// The public DatasetGenerator (include/nn/generate.h): text examples read by the engine's reader
// (data/text_examples.h), written as a dataset file together with the index files.
//
// Streaming (docs/large-datasets.md): a first pass over the input builds the feature and sample
// indices (in the order the in-memory reader builds them, so the numbers are the same) and counts
// examples and entries; a second pass writes the examples in slices straight into the NetCDF file
// (io/sparse_dataset_writer.h). Standard input is copied to an unnamed temporary file during the
// first pass and the second pass reads that copy. Only input whose examples come in ascending
// sample index order can be written as it is read; other input (an existing sample index that
// numbers the samples otherwise, rows of one sample far apart) is read into memory as before.
#include "nn/generate.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/file_identity.h"
#include "core/stop_request.h"
#include "data/text_examples.h"
#include "io/netcdf_dataset.h"
#include "io/sparse_dataset_writer.h"

namespace nn::api {
namespace {

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// How often (examples or rows) the passes look for a stop request.
constexpr uint64_t kStopCheck = uint64_t(1) << 16;

// Standard input kept for the second pass: a file in $TMPDIR without a name (or one removed at
// once), so nothing is left behind whatever happens to the process.
class Spool {
 public:
  Spool() {
    const std::string dir = temporary_directory();
    int fd = -1;
#ifdef O_TMPFILE
    fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
    if (fd < 0) {
      std::string name = dir + "/.nn-generate-stdin.XXXXXX";
      fd = ::mkstemp(&name[0]);
      if (fd >= 0) ::unlink(name.c_str());
    }
    if (fd >= 0) file_ = ::fdopen(fd, "w+b");
    if (!file_) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      throw IoError("<standard input>: cannot create a temporary copy in '" + dir +
                    "' for the second pass (set TMPDIR): " + std::strerror(err));
    }
  }
  ~Spool() {
    std::fclose(file_);
  }
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  std::FILE* file() const {
    return file_;
  }
  void flush() const {
    if (std::fflush(file_) != 0)
      throw IoError("<standard input>: cannot keep a copy in '" + temporary_directory() +
                    "' for the second pass: " + std::strerror(errno));
  }

 private:
  std::FILE* file_ = nullptr;
};

// First pass: how many examples and entries, and whether they come in ascending sample index
// order (rows of one sample together), the order of the dataset.
class Census : public ExampleSink {
 public:
  explicit Census(std::string stop_what) : stop_what_(std::move(stop_what)) {}

  void add(uint64_t sample, const uint32_t*, const float*, size_t n) override {
    if (!started_ || sample != last_) {
      if (started_ && sample < last_) in_order_ = false;
      ++examples_;
      last_ = sample;
      started_ = true;
    }
    entries_ += n;
    if ((++calls_ & (kStopCheck - 1)) == 0) throw_if_stop_requested(stop_what_);
  }

  bool in_order() const { return in_order_; }
  uint64_t examples() const { return examples_; }  // exact when in_order()
  uint64_t entries() const { return entries_; }

 private:
  std::string stop_what_;
  uint64_t last_ = 0, examples_ = 0, entries_ = 0, calls_ = 0;
  bool started_ = false, in_order_ = true;
};

// Second pass: the examples, in order, into the file in slices of `slice` entries (and slices of
// as many examples for the offsets).
class Emitter : public ExampleSink {
 public:
  Emitter(SparseDatasetWriter& writer, uint64_t slice, bool analog, const Census& census,
          std::string input, std::string stop_what)
      : writer_(writer),
        slice_(slice),
        analog_(analog),
        census_(census),
        input_(std::move(input)),
        stop_what_(std::move(stop_what)) {
    index_.reserve(slice_);
    if (analog_) values_.reserve(slice_);
  }

  void add(uint64_t sample, const uint32_t* features, const float* values, size_t n) override {
    if (!started_ || sample != last_) {
      if (started_ && sample < last_) changed();
      if (started_) close_example();
      example_start_ = entries_;
      last_ = sample;
      started_ = true;
    }
    while (n > 0) {
      const size_t take = size_t(std::min<uint64_t>(n, slice_ - index_.size()));
      index_.insert(index_.end(), features, features + take);
      if (analog_) values_.insert(values_.end(), values, values + take);
      features += take;
      if (analog_) values += take;
      n -= take;
      entries_ += take;
      if (index_.size() == slice_) flush_entries();
    }
    if ((++calls_ & (kStopCheck - 1)) == 0) throw_if_stop_requested(stop_what_);
  }

  // The last example and the partial slices; checks the totals against the first pass.
  void finish() {
    if (started_) close_example();
    flush_offsets();
    flush_entries();
    if (examples_ != census_.examples() || entries_ != census_.entries()) changed();
  }

 private:
  [[noreturn]] void changed() const {
    throw DataError(input_ + ": the input changed between the two passes over it (first: " +
                    std::to_string(census_.examples()) + " examples, " +
                    std::to_string(census_.entries()) + " entries); nothing was written");
  }

  void close_example() {
    starts_.push_back(example_start_);
    ends_.push_back(entries_);
    ++examples_;
    if (starts_.size() == slice_) flush_offsets();
  }

  void flush_offsets() {
    if (starts_.empty()) return;
    if (offsets_done_ + starts_.size() > census_.examples()) changed();
    writer_.put_offsets(offsets_done_, starts_, ends_);
    offsets_done_ += starts_.size();
    starts_.clear();
    ends_.clear();
  }

  void flush_entries() {
    if (index_.empty()) return;
    if (entries_done_ + index_.size() > census_.entries()) changed();
    writer_.put_entries(entries_done_, index_, values_);
    entries_done_ += index_.size();
    index_.clear();
    values_.clear();
  }

  SparseDatasetWriter& writer_;
  const uint64_t slice_;
  const bool analog_;
  const Census& census_;
  const std::string input_, stop_what_;
  std::vector<uint64_t> starts_, ends_;
  std::vector<uint32_t> index_;
  std::vector<float> values_;
  uint64_t last_ = 0, example_start_ = 0, examples_ = 0, entries_ = 0, calls_ = 0;
  uint64_t offsets_done_ = 0, entries_done_ = 0;
  bool started_ = false;
};

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
  // What a killed run of the same targets left (named temporary files; most have no name).
  for (const std::string* t : {&j.output, &j.features, &j.samples})
    if (!t->empty() && *t != kStandardOutput) remove_stale_temp_files(*t);
  if (j.deflate_level < 0 || j.deflate_level > 9)
    throw ArgumentError("deflate level " + std::to_string(j.deflate_level) + " is not 0..9");
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
  const std::string stop_what = "before writing " + j.output + "; nothing was written";

  // First pass: the indices, the counts, the order.
  const std::vector<std::string> files = text_example_files({j.input});
  std::optional<Spool> spool;
  if (std::find(files.begin(), files.end(), "-") != files.end()) spool.emplace();
  TextExamplesStats stats;
  Census census(stop_what);
  scan_text_examples(files, features, samples, opt, census, &stats,
                     StdinSpool{spool ? spool->file() : nullptr, nullptr});
  if (spool) spool->flush();
  if (census.examples() == 0)
    throw DataError(j.input + (j.rows ? ": no rows found (expected \"sample,feature[,value]\")"
                                      : ": no examples found (expected lines "
                                        "\"sample<TAB>feature[,value]:feature...\"; "
                                        "--rows reads one sample,feature[,value] row per line)"));
  throw_if_stop_requested(stop_what);

  // The dataset and the index files are one unit: all are written in full before any replaces
  // its target, so a failure (full disk, no permission) leaves the previous set as it was.
  // Index files are rewritten only when labels were added, as generateNetCDF does; a created
  // feature index replaces the old one even when this input has no features at all.
  GenerateReport r;
  std::vector<std::unique_ptr<AtomicFile>> outputs;
  // netCDF writes the streamed file by name (see AtomicFile's `named`).
  outputs.push_back(std::make_unique<AtomicFile>(j.output, census.in_order()));
  const StdinSpool reread{nullptr, spool ? spool->file() : nullptr};
  if (census.in_order()) {
    // Second pass: every label is known now, so lookups add nothing and give the same numbers.
    DatasetLayout layout;
    layout.chunk_entries = j.chunk_entries;
    layout.deflate_level = j.deflate_level;
    if (layout.deflate_level > 0 && layout.chunk_entries == 0) layout.chunk_entries = 1 << 20;
    // Slices of whole chunks: each write fills chunks completely, none is read back.
    const uint64_t fit = std::max<uint64_t>(j.buffer_bytes / 32, 4096);
    const uint64_t slice =
        layout.chunk_entries
            ? std::max<uint64_t>(fit / layout.chunk_entries, 1) * layout.chunk_entries
            : fit;
    SparseDatasetWriter writer(*outputs.back(), describe_examples(j.dataset, features, opt),
                               census.examples(), census.entries(), layout);
    TextExamplesOptions again = opt;
    again.allow_new_features = false;
    again.allow_new_samples = false;
    TextExamplesStats second;
    Emitter emitter(writer, slice, j.analog, census, j.input, stop_what);
    scan_text_examples(files, features, samples, again, emitter, &second, reread);
    emitter.finish();
    writer.finish();
    r.samples = census.examples();
    r.entries = census.entries();
    r.width = describe_examples(j.dataset, features, opt).width;
    r.streamed = true;
  } else {
    // Out of order: the in-memory reader sorts the examples (all labels are known by now).
    TextExamplesStats whole;
    ExampleSet ds = read_text_examples(files, j.dataset, features, samples, opt, &whole, reread);
    write_datasets(*outputs.back(), {ds});
    r.samples = whole.samples;
    r.entries = whole.entries;
    r.width = ds.width;
  }
  if (features.changed() || j.create_features) {
    outputs.push_back(std::make_unique<AtomicFile>(j.features));
    write_index(*outputs.back(), features);
  }
  if (samples.changed()) {
    outputs.push_back(std::make_unique<AtomicFile>(j.samples));
    write_index(*outputs.back(), samples);
  }
  std::vector<AtomicFile*> unit;
  for (auto& f : outputs) unit.push_back(f.get());
  // A stop request (a signal to nn-generate) leaves every target as it was.
  throw_if_stop_requested(stop_what);
  commit_all(unit);

  r.features = features.size();
  r.new_features = features.size() - old_features;
  r.dropped_features = stats.dropped_features;
  r.skipped_lines = stats.skipped_lines;
  r.extra_values = stats.extra_values;
  r.extra_columns = stats.extra_columns;
  return r;
}

}  // namespace nn::api
