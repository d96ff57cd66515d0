// Public API: text examples -> a NetCDF dataset file, as nn-generate makes it (DSSTNE's
// generateNetCDF). The input is "sample<TAB>feature[,value]:feature[,value]..." lines, or with
// `rows` one "sample,feature[,value]" row per entry (CSV such as MovieLens ratings.csv); features
// and samples are numbered through index files (label<TAB>index) that are loaded, extended and
// written back. The dataset and the index files are written as one unit: none replaces its
// target unless all were written.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace nn::api {

struct GenerateJob {
  std::string dataset;           // dataset name stored in the file
  std::string input;             // text file, a directory of them, or "-" for standard input
  std::string output;            // NetCDF file (replaced); "-" for standard output
  std::string features;          // feature index file
  std::string samples;           // sample index file: loaded when it exists, else created
  bool create_features = false;  // build a new feature index from this input (replaces it)
  bool merge_features = false;   // load the feature index and add this input's new features
  bool analog = false;           // keep the values (default: indicator data, every value 1)
  bool rows = false;             // one "sample,feature[,value]" row per entry
  bool header = false;           // with rows: each file's first line is a header
  uint32_t align = 128;          // the width is rounded up to a multiple of this
  // Streaming (docs/large-datasets.md): the input is read twice and the file written in slices
  // of at most this many bytes of arrays, so memory holds the index files and these buffers,
  // not the data. Input whose samples are out of order (an existing sample index numbers them
  // otherwise, or rows of one sample are apart) is put in order through an unnamed temporary
  // file beside the output (4 bytes per entry, 8 with values), also in buffers of this size.
  uint64_t buffer_bytes = uint64_t(64) << 20;
  uint64_t chunk_entries = 0;  // NetCDF-4 chunks of this many entries; 0: contiguous arrays
  int deflate_level = 0;       // 1..9: deflate (needs chunks; 1M entries when chunk_entries is 0)
};

// What was written, for a summary.
struct GenerateReport {
  uint64_t samples = 0, entries = 0;        // examples and non-zeros in the dataset
  uint64_t features = 0, new_features = 0;  // in the feature index after the run, and added
  uint64_t width = 0;                       // the dataset's width (features, aligned)
  uint64_t dropped_features = 0;            // features not in a fixed index
  uint64_t skipped_lines = 0;               // lines without a TAB
  uint64_t extra_values = 0;                // values after a feature's first
  uint64_t extra_columns = 0;               // rows with more columns than sample,feature,value
  bool streamed = false;   // written in slices (always, since out-of-order input too)
  bool reordered = false;  // out of sample index order: via a temporary file
};

class DatasetGenerator {
 public:
  // Loads the index files: the feature index unless a new one is created (DataError when it is
  // missing), the sample index when it exists.
  explicit DatasetGenerator(GenerateJob job);
  ~DatasetGenerator();
  DatasetGenerator(const DatasetGenerator&) = delete;
  DatasetGenerator& operator=(const DatasetGenerator&) = delete;

  // Reads the examples and writes the dataset and the index files that changed (the feature
  // index always with create_features). DataError naming the input when it has no examples,
  // or the file and line of a malformed one (a sample on two lines, a feature with a blank).
  GenerateReport generate();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nn::api
