// Parser for DSSTNE's text examples (its parseSamples; man nn-generate, INPUT FORMAT), producing
// one sparse dataset.
// Built for tens of millions of entries: files are read in large blocks, lines are split with
// string_view, numbers parsed with from_chars, and all entries go into one flat arena (a repeated
// sample just points at its newer range) instead of one vector per sample.
#include "data/text_examples.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/memory_budget.h"

namespace nn {

namespace {

namespace fs = std::filesystem;

// Expands directories into their regular files, sorted by path (DSSTNE reads them as one stream).
std::vector<std::string> input_files(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    if (p == "-") {  // standard input
      files.push_back(p);
      continue;
    }
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) throw DataError(p + ": input not found");
    if (!fs::is_directory(st)) {
      files.push_back(p);
      continue;
    }
    std::vector<std::string> found;
    for (fs::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file()) found.push_back(it->path().string());
    if (ec) throw DataError(p + ": cannot list directory: " + ec.message());
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Open-addressing map from label bytes to a FeatureIndex answer (id, or -1 for a dropped
// label), keys packed in one arena. Feature lookups dominate parsing; FeatureIndex needs the
// label as a std::string and a few cache misses per lookup, this table about one. Answers never
// change during a parse, so negative ones are cached too.
class LabelCache {
 public:
  LabelCache() : slots_(1 << 12) {}

  static uint32_t hash(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, folded to 32 bits
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return uint32_t(h ^ (h >> 32));
  }

  // Returns true and sets `id` when the label is cached.
  bool find(std::string_view s, uint32_t h, int64_t& id) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.len == 0) return false;  // labels are never empty, so 0 marks a free slot
      if (slot.hash == h && slot.len == s.size() &&
          std::memcmp(arena_.data() + slot.offset, s.data(), s.size()) == 0) {
        id = slot.id;
        return true;
      }
    }
  }

  // Caches the answer when it fits the compact slot (it always does in practice).
  void insert(std::string_view s, uint32_t h, int64_t id) {
    if (s.empty() || s.size() > UINT32_MAX || id > INT32_MAX ||
        arena_.size() + s.size() > UINT32_MAX)
      return;
    if (2 * (count_ + 1) > slots_.size()) grow();
    place(Slot{h, uint32_t(arena_.size()), uint32_t(s.size()), int32_t(id)});
    arena_.append(s.data(), s.size());
    ++count_;
  }

 private:
  struct Slot {  // 16 bytes, so the table of a ~30k-label index stays in cache
    uint32_t hash = 0, offset = 0, len = 0;
    int32_t id = 0;
  };

  void place(const Slot& slot) {
    const size_t mask = slots_.size() - 1;
    size_t i = slot.hash & mask;
    while (slots_[i].len != 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }

  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& slot : old)
      if (slot.len != 0) place(slot);
  }

  std::vector<Slot> slots_;
  std::string arena_;
  size_t count_ = 0;
};

class Parser {
 public:
  Parser(FeatureIndex& features, FeatureIndex& samples, const TextExamplesOptions& options,
         TextExamplesStats& stats, ExampleSink* sink = nullptr, StdinSpool spool = {})
      : features_(features),
        samples_(samples),
        options_(options),
        stats_(stats),
        sink_(sink),
        spool_(spool) {}

  void parse_file(const std::string& path) {
    if (path == "-" && spool_.read_from) {
      if (std::fseek(spool_.read_from, 0, SEEK_SET) != 0)
        throw DataError("<standard input>: cannot reread its copy: " +
                        std::string(std::strerror(errno)));
      return stream(spool_.read_from, "<standard input>");
    }
    if (path == "-") return stream(stdin, "<standard input>");
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw DataError(path + ": cannot open: " + std::strerror(errno));
    try {
      stream(f, path);
    } catch (...) {
      std::fclose(f);
      throw;
    }
    std::fclose(f);
  }

  ExampleSet build(const std::string& name) const;

 private:
  struct Range {
    uint64_t begin = 0, end = 0;
    bool present = false;
  };

  // Reads blocks and hands complete lines to parse_line; a partial last line is carried over.
  void stream(std::FILE* f, const std::string& path) {
    // 8 MiB blocks (at most one line's limit), or one block of the file's size when it is
    // smaller: many small files (and the fuzzer's inputs) would otherwise each allocate and zero
    // 8 MiB.
    uint64_t initial =
        std::min<uint64_t>(uint64_t(8) << 20, std::max<uint64_t>(options_.max_line_bytes, 1));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && uint64_t(st.st_size) < initial)
      initial = uint64_t(st.st_size) + 1;
    std::vector<char> buf(initial);
    size_t have = 0;
    uint64_t line_no = 0;
    for (;;) {
      if (have == buf.size()) {  // a line longer than the buffer
        if (buf.size() >= options_.max_line_bytes)
          fail(path, line_no + 1,
               "line longer than " + format_bytes(options_.max_line_bytes) +
                   " (the limit for one example); is this a text examples file?");
        buf.resize(std::min<uint64_t>(buf.size() * 2, options_.max_line_bytes));
      }
      const size_t got = std::fread(buf.data() + have, 1, buf.size() - have, f);
      if (got == 0 && std::ferror(f)) throw DataError(path + ": read error");
      if (f == stdin && spool_.copy_to && got > 0 &&
          std::fwrite(buf.data() + have, 1, got, spool_.copy_to) != got)
        throw IoError("<standard input>: cannot keep a copy for the second pass in '" +
                      temporary_directory() + "' (set TMPDIR): " + std::strerror(errno));
      const bool eof = got == 0;
      have += got;
      std::string_view block(buf.data(), have);
      size_t pos = 0;
      for (;;) {
        const size_t nl = block.find('\n', pos);
        if (nl == std::string_view::npos) break;
        dispatch(block.substr(pos, nl - pos), path, ++line_no);
        pos = nl + 1;
      }
      if (eof) {
        if (pos < have) dispatch(block.substr(pos), path, ++line_no);
        return;
      }
      std::memmove(buf.data(), buf.data() + pos, have - pos);
      have -= pos;
    }
  }

  [[noreturn]] static void fail(const std::string& path, uint64_t line_no,
                                const std::string& problem) {
    throw DataError(path + ":" + std::to_string(line_no) + ": " + problem);
  }

  void dispatch(std::string_view line, const std::string& path, uint64_t line_no) {
    if (!options_.rows) return parse_line(line, path, line_no);
    if (line_no == 1 && options_.skip_header) return;
    parse_row(line, path, line_no);
  }

  // Rows layout: sample<SEP>feature[<SEP>value[<SEP>...]], SEP a TAB when the line has one, else
  // a comma. Entries are kept in file order with their sample; build() groups them per sample.
  void parse_row(std::string_view line, const std::string& path, uint64_t line_no) {
    ++stats_.lines;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim_blanks(line).empty()) return;
    const char sep = line.find('\t') != std::string_view::npos ? '\t' : ',';
    std::string_view field[3];
    size_t pos = 0;
    int n = 0;
    for (; n < 3 && pos <= line.size(); ++n) {
      size_t end = line.find(sep, pos);
      if (end == std::string_view::npos) end = line.size();
      field[n] = trim_blanks(line.substr(pos, end - pos));
      pos = end + 1;
    }
    if (n == 3 && pos <= line.size()) ++stats_.extra_columns;
    if (n < 2 || field[0].empty() || field[1].empty())
      fail(path, line_no,
           "expected a row \"sample,feature[,value]\" (comma- or TAB-separated), got \"" +
               std::string(line.substr(0, 80)) + "\"");
    key_.assign(field[0].data(), field[0].size());
    const int64_t s = samples_.lookup(key_, options_.allow_new_samples);
    if (s < 0) {
      ++stats_.dropped_samples;
      return;
    }
    const uint64_t before = feature_.size();
    if (options_.mode == ExampleMode::Analog) {
      if (n < 3 || field[2].empty())
        fail(path, line_no, "analog rows need a value: sample,feature,value");
      const float v =
          parse_value(field[2], line.substr(0, std::min<size_t>(line.size(), 80)), path, line_no);
      add_entry(field[1], v, path, line_no);
    } else {
      add_entry(field[1], 0.0f, path, line_no);
    }
    if (sink_) {
      mark_seen(uint64_t(s));
      hand_over(uint64_t(s), before);
      return;
    }
    if (feature_.size() > before) row_sample_.push_back(uint64_t(s));
    if (uint64_t(s) >= ranges_.size()) ranges_.resize(std::max<uint64_t>(s + 1, samples_.size()));
    ranges_[s].present = true;
  }

  // Streaming: the sample was seen (one bit per sample instead of a range).
  bool seen(uint64_t s) const { return s < seen_.size() && seen_[s]; }
  void mark_seen(uint64_t s) {
    if (s >= seen_.size()) seen_.resize(std::max<uint64_t>(s + 1, samples_.size()));
    seen_[s] = true;
  }
  // Streaming: the entries from `begin` on go to the sink and leave the arenas.
  void hand_over(uint64_t s, uint64_t begin) {
    const size_t n = feature_.size() - begin;
    const bool analog = options_.mode == ExampleMode::Analog;
    sink_->add(s, feature_.data() + begin, analog ? value_.data() + begin : nullptr, n);
    feature_.clear();
    value_.clear();
  }

  void parse_line(std::string_view line, const std::string& path, uint64_t line_no) {
    ++stats_.lines;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) return;
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos) {
      ++stats_.skipped_lines;
      return;
    }
    const std::string_view sample = line.substr(0, tab), tuples = line.substr(tab + 1);
    if (sample.empty()) fail(path, line_no, "empty sample name before the TAB");
    if (tuples.find('\t') != std::string_view::npos)
      fail(path, line_no, "more than one TAB; expected sample<TAB>feature[,value]:...");
    key_.assign(sample.data(), sample.size());
    const int64_t s = samples_.lookup(key_, options_.allow_new_samples);
    if (s < 0) {
      ++stats_.dropped_samples;
      return;
    }
    const bool again =
        sink_ ? seen(uint64_t(s)) : uint64_t(s) < ranges_.size() && ranges_[s].present;
    if (options_.strict && again)
      fail(path, line_no,
           "sample \"" + key_ +
               "\" is on an earlier line too; this format takes one line per sample "
               "(sample<TAB>feature:feature:...). For one row per (sample, feature) pair, read "
               "the file as rows (nn-generate --rows)");

    const uint64_t begin = feature_.size();
    size_t pos = 0;
    while (pos <= tuples.size()) {
      size_t colon = tuples.find(':', pos);
      if (colon == std::string_view::npos) colon = tuples.size();
      add_tuple(tuples.substr(pos, colon - pos), path, line_no);
      pos = colon + 1;
    }

    if (sink_) {
      if (again) ++stats_.replaced_samples;
      mark_seen(uint64_t(s));
      hand_over(uint64_t(s), begin);
      return;
    }
    if (uint64_t(s) >= ranges_.size()) ranges_.resize(std::max<uint64_t>(s + 1, samples_.size()));
    Range& r = ranges_[s];
    if (r.present) ++stats_.replaced_samples;
    r = Range{begin, feature_.size(), true};
  }

  void add_tuple(std::string_view tuple, const std::string& path, uint64_t line_no) {
    const size_t comma = tuple.find(',');
    const std::string_view name = tuple.substr(0, comma);
    if (name.empty()) return;  // "a::b", trailing ':' or ",5": nothing to index
    if (options_.strict && name.find(' ') != std::string_view::npos)
      fail(path, line_no,
           "feature \"" + std::string(name) +
               "\" contains a blank; features are separated by ':' "
               "(sample<TAB>feature[,value]:feature[,value]...)");
    float value = 0.0f;
    if (comma != std::string_view::npos) {
      std::string_view text = tuple.substr(comma + 1);
      const size_t extra = text.find(',');
      if (extra != std::string_view::npos) {
        ++stats_.extra_values;  // DSSTNE keeps the first value
        text = text.substr(0, extra);
      }
      value = parse_value(text, tuple, path, line_no);
    }
    add_entry(name, value, path, line_no);
  }

  void add_entry(std::string_view name, float value, const std::string& path, uint64_t line_no) {
    const uint32_t h = LabelCache::hash(name);
    int64_t f;
    if (!cache_.find(name, h, f)) {
      key_.assign(name.data(), name.size());
      f = features_.lookup(key_, options_.allow_new_features);
      cache_.insert(name, h, f);
    }
    if (f < 0) {
      ++stats_.dropped_features;
      return;
    }
    if (f > int64_t(UINT32_MAX) - 1)
      fail(path, line_no, "more than 2^32-1 features; feature ids must fit 32 bits");
    feature_.push_back(static_cast<uint32_t>(f));
    if (options_.mode == ExampleMode::Analog) value_.push_back(value);
  }

  static float parse_value(std::string_view text, std::string_view tuple, const std::string& path,
                           uint64_t line_no) {
    std::string_view t = trim_blanks(text);
    if (!t.empty() && t.front() == '+') t.remove_prefix(1);  // accepted by DSSTNE's stof
    float v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v))
      fail(path, line_no,
           "feature \"" + std::string(tuple) + "\": value \"" + std::string(text) +
               "\" is not a finite number");
    return v;
  }

  FeatureIndex& features_;
  FeatureIndex& samples_;
  const TextExamplesOptions& options_;
  TextExamplesStats& stats_;
  std::string key_;                   // reused lookup key: no allocation per token
  LabelCache cache_;                  // feature label -> id (or -1), in front of features_
  std::vector<uint32_t> feature_;     // arena of feature ids for all lines
  std::vector<float> value_;          // arena of values (analog mode only)
  std::vector<Range> ranges_;         // by sample index
  std::vector<uint64_t> row_sample_;  // rows layout: the sample of each entry in feature_
  ExampleSink* sink_;                 // streaming: examples go here instead of the arenas
  StdinSpool spool_;
  std::vector<bool> seen_;  // streaming: samples seen so far
};

ExampleSet Parser::build(const std::string& name) const {
  ExampleSet ds = describe_examples(name, features_, options_);
  const bool indicator = options_.mode == ExampleMode::Indicator;

  // Rows layout: group the entries per sample (a stable counting sort keeps file order within
  // a sample), giving each sample one range as the examples layout has.
  std::vector<Range> grouped;
  std::vector<uint32_t> grouped_feature;
  std::vector<float> grouped_value;
  const std::vector<Range>* ranges = &ranges_;
  const std::vector<uint32_t>* feature = &feature_;
  const std::vector<float>* value = &value_;
  if (options_.rows) {
    grouped.assign(ranges_.size(), Range{});
    for (uint64_t s : row_sample_) ++grouped[s].end;
    uint64_t at = 0;
    for (size_t s = 0; s < grouped.size(); ++s) {
      const uint64_t count = grouped[s].end;
      grouped[s] = Range{at, at, ranges_[s].present};
      at += count;
    }
    grouped_feature.resize(feature_.size());
    if (!indicator) grouped_value.resize(feature_.size());
    for (size_t i = 0; i < row_sample_.size(); ++i) {
      Range& r = grouped[row_sample_[i]];
      grouped_feature[r.end] = feature_[i];
      if (!indicator) grouped_value[r.end] = value_[i];
      ++r.end;
    }
    ranges = &grouped;
    feature = &grouped_feature;
    value = &grouped_value;
  }

  // Examples in ascending sample index order (DSSTNE iterates a std::map keyed by index).
  uint64_t examples = 0, entries = 0;
  for (const Range& r : *ranges)
    if (r.present) ++examples, entries += r.end - r.begin;
  ds.examples = ds.unique_examples = examples;
  ds.sparse_start.reserve(examples);
  ds.sparse_end.reserve(examples);
  ds.sparse_index.reserve(entries);
  if (!indicator) ds.sparse_value.reserve(entries);
  for (const Range& r : *ranges) {
    if (!r.present) continue;
    ds.sparse_start.push_back(ds.sparse_index.size());
    ds.sparse_index.insert(ds.sparse_index.end(), feature->begin() + r.begin,
                           feature->begin() + r.end);
    if (!indicator)
      ds.sparse_value.insert(ds.sparse_value.end(), value->begin() + r.begin,
                             value->begin() + r.end);
    ds.sparse_end.push_back(ds.sparse_index.size());
  }
  stats_.samples = examples;
  stats_.entries = entries;
  return ds;
}

}  // namespace

ExampleSet describe_examples(const std::string& name, const FeatureIndex& features,
                             const TextExamplesOptions& options) {
  ExampleSet ds;
  ds.name = name;
  const bool indicator = options.mode == ExampleMode::Indicator;
  ds.type = indicator ? DataType::UInt : DataType::Float;
  ds.attributes = attr::Sparse | (indicator ? attr::Boolean : 0);
  ds.kind = DataKind::Numeric;
  ds.dimensions = 1;
  const uint64_t align = std::max<uint32_t>(options.width_align, 1);
  const uint64_t n = std::max<uint64_t>(features.size(), 1);
  const uint64_t width = std::max<uint64_t>((n + align - 1) / align * align, options.min_width);
  if (width > UINT32_MAX)
    throw DataError("dataset \"" + name + "\": width " + std::to_string(width) +
                    " does not fit 32 bits");
  ds.width = static_cast<uint32_t>(width);
  // The names travel with the dataset, so that a network trained on it knows its items.
  std::vector<std::string> names(features.size());
  for (uint64_t i = 0; i < features.size(); ++i) names[i] = features.label(i);
  ds.feature_names = make_feature_names(std::move(names));
  return ds;
}

std::vector<std::string> text_example_files(const std::vector<std::string>& paths) {
  return input_files(paths);
}

void scan_text_examples(const std::vector<std::string>& files, FeatureIndex& features,
                        FeatureIndex& samples, const TextExamplesOptions& options,
                        ExampleSink& sink, TextExamplesStats* stats, const StdinSpool& spool) {
  TextExamplesStats local;
  TextExamplesStats& st = stats ? *stats : local;
  st = TextExamplesStats{};
  Parser parser(features, samples, options, st, &sink, spool);
  for (const std::string& file : files) parser.parse_file(file);
}

ExampleSet read_text_examples(const std::vector<std::string>& paths, const std::string& name,
                              FeatureIndex& features, FeatureIndex& samples,
                              const TextExamplesOptions& options, TextExamplesStats* stats,
                              const StdinSpool& spool) {
  TextExamplesStats local;
  TextExamplesStats& st = stats ? *stats : local;
  st = TextExamplesStats{};
  Parser parser(features, samples, options, st, nullptr, spool);
  for (const std::string& file : input_files(paths)) parser.parse_file(file);
  return parser.build(name);
}

}  // namespace nn
