// DSSTNE's text example format and index files (docs/file-formats.md, "Text examples and index
// files"; the rules in man nn-generate, INPUT FORMAT and INDEX FILES):
//   sample<TAB>feature[,value]:feature[,value]...
//   label<TAB>index
#pragma once

#include <cstdint>
#include <cstdio>
#include <istream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"

namespace nn {

class AtomicFile;

// Label -> index map that also remembers labels in index order. Labels are packed in one arena
// and found through an open-addressing table of their indices: about 40 bytes a label beside
// its bytes, against about 130 for a std::unordered_map of std::string and a vector of them,
// which matters for sample indices of tens of millions (docs/large-datasets.md).
class FeatureIndex {
 public:
  // Returns the index of `label`, adding it if absent and `allow_new`; returns -1 when absent and
  // new labels are not allowed.
  int64_t lookup(const std::string& label, bool allow_new);
  int64_t find(const std::string& label) const;
  // The label of index i; "" for a gap (an index a loaded file did not use).
  std::string label(uint64_t i) const { return std::string(view(i)); }
  std::string_view view(uint64_t i) const {
    return std::string_view(arena_.data() + offset_[i], length_[i]);
  }
  uint64_t size() const { return length_.size(); }
  bool changed() const { return changed_; }
  void clear_changed() { changed_ = false; }
  // Inserts an explicit mapping (used when loading files); throws DataError on duplicates.
  void insert(const std::string& label, uint64_t idx, const std::string& where);

 private:
  // The slot of `label` (hash `h`) in slots_: its entry, or the free slot where it would go.
  size_t slot_of(std::string_view label, uint64_t h) const;
  void add_at(std::string_view label, uint64_t idx, uint64_t h);
  void grow();

  std::string arena_;             // every label's bytes, one after the other
  std::vector<uint64_t> offset_;  // by index: where its label starts in arena_
  std::vector<uint32_t> length_;  // by index: its length; 0 for gaps
  std::vector<uint64_t> slots_;   // 0 free, else (hash's top 24 bits << 40) | (index + 1)
  uint64_t count_ = 0;            // labels in slots_
  bool changed_ = false;
};

// Index files: one "label<TAB>index" per line. Throws DataError("<path>:<line>: ...").
FeatureIndex load_index(const std::string& path);
// Written sorted by index, atomically (temporary file + rename).
void save_index(const std::string& path, const FeatureIndex& index);
// Writes what save_index writes into `out` in pieces (not committed), for tools that commit it
// with other outputs as one unit.
void write_index(AtomicFile& out, const FeatureIndex& index);
// The file content save_index writes (for tools that commit it with other outputs as one unit).
std::string format_index(const std::string& path, const FeatureIndex& index);

enum class ExampleMode { Indicator, Analog };

struct TextExamplesOptions {
  ExampleMode mode = ExampleMode::Indicator;
  bool allow_new_features = true;  // false => unknown features are dropped (and counted)
  bool allow_new_samples = true;
  uint32_t width_align = 128;  // width rounded up to a multiple of this (1 = none)
  uint32_t min_width = 0;      // at least this wide (e.g. an existing feature index size)
  // Longest line accepted: a file without line breaks must not grow the line buffer without end
  // (one example with a million features is ~10 MB).
  uint64_t max_line_bytes = uint64_t(256) << 20;
  // Signs of a file in another format are errors instead of silent data loss (nn-generate): a
  // sample on a second line (DSSTNE kept only the last line) and a feature name with a blank
  // (features are separated by ':', "a b" is one feature named "a b").
  bool strict = false;
  // Rows layout: one entry per line, "sample,feature[,value[,more...]]" (or TAB-separated, as
  // MovieLens' ratings.csv and most exports), rows of a sample grouped wherever they appear.
  // Columns after the value are ignored; in indicator mode the value column is ignored too.
  bool rows = false;
  bool skip_header = false;  // the first line of each file is a header (rows layout)
};

struct TextExamplesStats {
  uint64_t lines = 0, samples = 0, entries = 0, dropped_features = 0, skipped_lines = 0;
  uint64_t dropped_samples = 0;   // unknown samples when allow_new_samples is false
  uint64_t extra_values = 0;      // tuples with more than one value (first one kept)
  uint64_t replaced_samples = 0;  // lines whose sample appeared before (the later line wins)
  uint64_t extra_columns = 0;     // rows layout: rows with columns after the value (ignored)
};

// Standard input for two passes: the first copies what it reads to `copy_to`, the second reads
// `read_from` (rewound) in its place. Both null: standard input is read as it is.
struct StdinSpool {
  std::FILE* copy_to = nullptr;
  std::FILE* read_from = nullptr;
};

// Parses examples from files (a directory means all its regular files, sorted; "-" is standard
// input) into one sparse dataset named `name`. Examples are ordered by ascending sample index.
// Malformed values throw DataError("<file>:<line>: ...").
ExampleSet read_text_examples(const std::vector<std::string>& paths, const std::string& name,
                              FeatureIndex& features, FeatureIndex& samples,
                              const TextExamplesOptions& options,
                              TextExamplesStats* stats = nullptr, const StdinSpool& spool = {});

// Streaming reads (nn-generate on inputs larger than memory): the examples are handed over one
// at a time instead of being kept.
class ExampleSink {
 public:
  virtual ~ExampleSink() = default;
  // One example of sample index `sample` (examples layout), or one row (rows layout: n is 0 or
  // 1, and a sample's rows may come in many calls): n feature ids and, in analog mode, n values
  // (nullptr in indicator mode). n is 0 when every feature was dropped.
  virtual void add(uint64_t sample, const uint32_t* features, const float* values, size_t n) = 0;
};

// The files read_text_examples reads for `paths`: directories expanded to their regular files,
// sorted; "-" kept for standard input. DataError when a path does not exist.
std::vector<std::string> text_example_files(const std::vector<std::string>& paths);

// Parses `files` (as text_example_files gives them) exactly as read_text_examples does (the same
// index lookups in the same order, the same errors) but hands each example or row to `sink`:
// memory holds the indices, one bit per sample and one block of input. stats->samples and
// stats->entries are left 0 (the sink counts).
void scan_text_examples(const std::vector<std::string>& files, FeatureIndex& features,
                        FeatureIndex& samples, const TextExamplesOptions& options,
                        ExampleSink& sink, TextExamplesStats* stats = nullptr,
                        const StdinSpool& spool = {});

// The description read_text_examples gives its dataset named `name` (type, attributes, width
// from the size of `features`), without arrays.
ExampleSet describe_examples(const std::string& name, const FeatureIndex& features,
                             const TextExamplesOptions& options);

}  // namespace nn
