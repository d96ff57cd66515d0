// The public DatasetGenerator (include/nn/generate.h): text examples read by the engine's reader
// (data/text_examples.h), written as a dataset file together with the index files.
//
// Streaming (docs/large-datasets.md): a first pass over the input builds the feature and sample
// indices (in the order the in-memory reader builds them, so the numbers are the same) and counts
// each sample's entries; a second pass writes the examples in slices straight into the NetCDF
// file (io/sparse_dataset_writer.h). Standard input is copied to an unnamed temporary file during
// the first pass and the second pass reads that copy. Input whose examples come in ascending
// sample index order is written as it is read. Other input (an existing sample index that
// numbers the samples otherwise, rows of one sample far apart) is put in order through an
// unnamed scratch file beside the output: the counts give every entry its place, the second pass
// writes buffered entries there sorted by place, and a third reads the scratch file in order
// into the dataset. Memory holds the indices, 16 bytes per sample and the buffers either way.
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

// A temporary file without a name (or one removed at once) in `dir`, so nothing is left behind
// whatever happens to the process: standard input kept for the second pass, and the entries of
// out-of-order input on their way into order. `what` names it in messages.
class ScratchFile {
 public:
  ScratchFile(std::string dir, std::string what) : dir_(std::move(dir)), what_(std::move(what)) {
    int fd = -1;
#ifdef O_TMPFILE
    fd = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
    if (fd < 0) {
      std::string name = dir_ + "/.nn-generate-scratch.XXXXXX";
      fd = ::mkstemp(&name[0]);
      if (fd >= 0) ::unlink(name.c_str());
    }
    if (fd >= 0) file_ = ::fdopen(fd, "w+b");
    if (!file_) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      throw IoError(what_ + ": cannot create a temporary file in '" + dir_ +
                    "': " + std::strerror(err));
    }
  }
  ~ScratchFile() {
    std::fclose(file_);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  std::FILE* file() const {
    return file_;
  }
  void flush() const {
    if (std::fflush(file_) != 0) fail("cannot write");
  }
  // Raw positioned writes and reads (not through the FILE buffer).
  void write_at(uint64_t offset, const void* data, size_t bytes) const {
    transfer(offset, const_cast<void*>(data), bytes, true);
  }
  void read_at(uint64_t offset, void* data, size_t bytes) const {
    transfer(offset, data, bytes, false);
  }

 private:
  // pwrite/pread until every byte has gone (they may do part of it, or be interrupted).
  void transfer(uint64_t offset, void* data, size_t bytes, bool write) const {
    char* p = static_cast<char*>(data);
    while (bytes > 0) {
      const ssize_t n = write ? ::pwrite(fileno(file_), p, bytes, off_t(offset))
                              : ::pread(fileno(file_), p, bytes, off_t(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail(write ? "cannot write" : "cannot read back");
      p += n;
      offset += uint64_t(n);
      bytes -= size_t(n);
    }
  }

  [[noreturn]] void fail(const std::string& action) const {
    const int err = errno;
    throw IoError(what_ + ": " + action + " its temporary file in '" + dir_ +
                  "': " + (err ? std::strerror(err) : "end of file"));
  }

  std::string dir_, what_;
  std::FILE* file_ = nullptr;
};

// First pass: how many examples and entries, each sample's entries, and whether the examples
// come in ascending sample index order (rows of one sample together), the order of the dataset.
class Census : public ExampleSink {
 public:
  explicit Census(std::string stop_what) : stop_what_(std::move(stop_what)) {}

  void add(uint64_t sample, const uint32_t*, const float*, size_t n) override {
    if (!started_ || sample != last_) {
      if (started_ && sample < last_) in_order_ = false;
      last_ = sample;
      started_ = true;
    }
    if (sample >= counts_.size()) counts_.resize(sample + 1);
    if (counts_[sample] == 0) {  // a new example (0 means absent, so counts are one more)
      counts_[sample] = 1;
      ++examples_;
    }
    counts_[sample] += n;
    entries_ += n;
    if ((++calls_ & (kStopCheck - 1)) == 0) throw_if_stop_requested(stop_what_);
  }

  bool in_order() const { return in_order_; }
  uint64_t examples() const { return examples_; }
  uint64_t entries() const { return entries_; }
  // By sample index: 0 for a sample this input does not have, else 1 + its entries. Taken.
  std::vector<uint64_t> take_counts() { return std::move(counts_); }

 private:
  std::string stop_what_;
  std::vector<uint64_t> counts_;
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

// Out-of-order input, second pass: every entry has its place in the dataset (its sample's start,
// from the first pass's counts, plus the sample's entries before it in input order, as the
// in-memory reader keeps them). Entries are buffered with their places, sorted by place when the
// buffer is full, and written to the scratch file in runs of consecutive places: sparseIndex at
// [0, 4 * entries), the values (analog) after it. finish() then copies the scratch file in order
// into the dataset, with the offsets from the counts.
class Scatter : public ExampleSink {
 public:
  Scatter(std::vector<uint64_t> counts, uint64_t samples, uint64_t entries, uint64_t buffer,
          bool analog, const ScratchFile& scratch, std::string input, std::string stop_what)
      : end_(std::move(counts)),
        entries_(entries),
        buffer_(std::max<uint64_t>(buffer, 1)),
        analog_(analog),
        scratch_(scratch),
        input_(std::move(input)),
        stop_what_(std::move(stop_what)) {
    // end_ holds 1 + count per present sample; next_ becomes each one's start, end_ its end.
    end_.resize(std::max<uint64_t>(end_.size(), samples), 0);
    next_.assign(end_.size(), 0);
    uint64_t at = 0;
    for (size_t s = 0; s < end_.size(); ++s) {
      if (end_[s] == 0) {
        end_[s] = kAbsent;
        continue;
      }
      next_[s] = at;
      at += end_[s] - 1;
      end_[s] = at;
    }
    if (at != entries_) changed();
    pending_.reserve(size_t(std::min<uint64_t>(buffer_, entries_)));
  }

  void add(uint64_t sample, const uint32_t* features, const float* values, size_t n) override {
    if (sample >= end_.size() || end_[sample] == kAbsent || end_[sample] - next_[sample] < n)
      changed();
    uint64_t& at = next_[sample];
    for (size_t k = 0; k < n; ++k) {
      pending_.push_back(Entry{at++, features[k], analog_ ? values[k] : 0.0f});
      if (pending_.size() == buffer_) flush();
    }
    if ((++calls_ & (kStopCheck - 1)) == 0) throw_if_stop_requested(stop_what_);
  }

  // The last buffer, the checks against the first pass, then the dataset in slices of `slice`.
  void finish(SparseDatasetWriter& writer, uint64_t slice) {
    flush();
    for (size_t s = 0; s < end_.size(); ++s)
      if (end_[s] != kAbsent && next_[s] != end_[s]) changed();
    next_.clear();
    next_.shrink_to_fit();
    std::vector<uint64_t> starts, ends;
    uint64_t at = 0, done = 0;
    for (uint64_t e : end_) {
      if (e == kAbsent) continue;
      starts.push_back(at);
      ends.push_back(e);
      at = e;
      if (starts.size() == slice) {
        writer.put_offsets(done, starts, ends);
        done += starts.size();
        starts.clear();
        ends.clear();
      }
    }
    if (!starts.empty()) writer.put_offsets(done, starts, ends);
    std::vector<uint32_t> index;
    std::vector<float> values;
    for (uint64_t first = 0; first < entries_; first += slice) {
      const uint64_t n = std::min<uint64_t>(slice, entries_ - first);
      index.resize(size_t(n));
      scratch_.read_at(first * 4, index.data(), size_t(n) * 4);
      if (analog_) {
        values.resize(size_t(n));
        scratch_.read_at((entries_ + first) * 4, values.data(), size_t(n) * 4);
      }
      writer.put_entries(first, index, values);
      throw_if_stop_requested(stop_what_);
    }
  }

 private:
  static constexpr uint64_t kAbsent = ~uint64_t(0);
  struct Entry {
    uint64_t at;
    uint32_t feature;
    float value;
  };

  [[noreturn]] void changed() const {
    throw DataError(input_ + ": the input changed between the two passes over it; nothing " +
                    "was written");
  }

  void flush() {
    if (pending_.empty()) return;
    std::sort(pending_.begin(), pending_.end(),
              [](const Entry& a, const Entry& b) { return a.at < b.at; });
    run_index_.resize(pending_.size());
    if (analog_) run_values_.resize(pending_.size());
    for (size_t i = 0; i < pending_.size(); ++i) {
      run_index_[i] = pending_[i].feature;
      if (analog_) run_values_[i] = pending_[i].value;
    }
    for (size_t i = 0; i < pending_.size();) {
      size_t j = i + 1;
      while (j < pending_.size() && pending_[j].at == pending_[j - 1].at + 1) ++j;
      const uint64_t at = pending_[i].at;
      scratch_.write_at(at * 4, run_index_.data() + i, (j - i) * 4);
      if (analog_) scratch_.write_at((entries_ + at) * 4, run_values_.data() + i, (j - i) * 4);
      i = j;
    }
    pending_.clear();
  }

  std::vector<uint64_t> end_, next_;
  const uint64_t entries_, buffer_;
  const bool analog_;
  const ScratchFile& scratch_;
  const std::string input_, stop_what_;
  std::vector<Entry> pending_;
  std::vector<uint32_t> run_index_;
  std::vector<float> run_values_;
  uint64_t calls_ = 0;
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
  std::optional<ScratchFile> spool;
  if (std::find(files.begin(), files.end(), "-") != files.end())
    spool.emplace(temporary_directory(),
                  "<standard input> (kept for the second pass; set TMPDIR for another place)");
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
  outputs.push_back(std::make_unique<AtomicFile>(j.output, true));
  const StdinSpool reread{nullptr, spool ? spool->file() : nullptr};
  DatasetLayout layout;
  layout.chunk_entries = j.chunk_entries;
  layout.deflate_level = j.deflate_level;
  if (layout.deflate_level > 0 && layout.chunk_entries == 0) layout.chunk_entries = 1 << 20;
  // Slices of whole chunks: each write fills chunks completely, none is read back.
  const uint64_t fit = std::max<uint64_t>(j.buffer_bytes / 32, 4096);
  const uint64_t slice = layout.chunk_entries ? std::max<uint64_t>(fit / layout.chunk_entries, 1) *
                                                    layout.chunk_entries
                                              : fit;
  SparseDatasetWriter writer(*outputs.back(), describe_examples(j.dataset, features, opt),
                             census.examples(), census.entries(), layout);
  // Second pass: every label is known now, so lookups add nothing and give the same numbers.
  TextExamplesOptions again = opt;
  again.allow_new_features = false;
  again.allow_new_samples = false;
  TextExamplesStats second;
  std::vector<uint64_t> counts = census.take_counts();
  if (census.in_order()) {
    counts = {};
    Emitter emitter(writer, slice, j.analog, census, j.input, stop_what);
    scan_text_examples(files, features, samples, again, emitter, &second, reread);
    emitter.finish();
  } else {
    // Out of order: the entries go to their places in a scratch file beside the output (where
    // there is room for the output), then in order into the dataset.
    const std::string out_dir = j.output == kStandardOutput ? temporary_directory()
                                : std::filesystem::path(j.output).parent_path().empty()
                                    ? std::string(".")
                                    : std::filesystem::path(j.output).parent_path().string();
    ScratchFile scratch(out_dir, j.output +
                                     " (examples out of sample index order, put in "
                                     "order through a temporary file)");
    Scatter scatter(std::move(counts), samples.size(), census.entries(), fit, j.analog, scratch,
                    j.input, stop_what);
    scan_text_examples(files, features, samples, again, scatter, &second, reread);
    scatter.finish(writer, slice);
    r.reordered = true;
  }
  writer.finish();
  r.samples = census.examples();
  r.entries = census.entries();
  r.width = describe_examples(j.dataset, features, opt).width;
  r.streamed = true;
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
