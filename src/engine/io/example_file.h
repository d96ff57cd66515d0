// Reading chosen examples of a dataset file instead of the whole file: streaming training and
// sharded reads (docs/large-datasets.md, "Streaming training"). The sizes in the header are
// checked against what the file can hold when it is opened (a header that lies is refused as
// whole-file reading refuses it), but never against the memory budget: only the examples asked
// for are read, as ranges of the sparse offsets, entries, dense values and weights.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace nn {

class NetcdfReader;

// What the reads cost, for logs and tests.
struct ExampleReadStats {
  uint64_t examples = 0;  // examples read
  uint64_t bytes = 0;     // bytes of array values read from the file (as stored)
  uint64_t ranges = 0;    // contiguous ranges asked of the netCDF library
  void add(const ExampleReadStats& o) {
    examples += o.examples, bytes += o.bytes, ranges += o.ranges;
  }
};

class ExampleFile;

// Dataset `dataset` of an open file: where a streamed binding's examples come from.
struct StreamedDataset {
  std::shared_ptr<ExampleFile> file;
  size_t dataset = 0;
};

class ExampleFile {
 public:
  // Opens `path` and reads every dataset's header. DataError naming the file and the variable
  // when the header is damaged or claims more than the file holds.
  explicit ExampleFile(const std::string& path);
  ~ExampleFile();
  ExampleFile(const ExampleFile&) = delete;
  ExampleFile& operator=(const ExampleFile&) = delete;

  const std::string& path() const { return path_; }
  size_t datasets() const { return headers_.size(); }
  // Dataset n's description with no arrays (examples, features, attributes).
  const ExampleSet& header(size_t n) const { return headers_[n]; }
  // Bytes dataset n's arrays take in memory when read whole.
  uint64_t memory_bytes(size_t n) const;
  // Average bytes one example of dataset n takes in memory (at least 1).
  double bytes_per_example(size_t n) const;

  // netCDF's chunk cache (netCDF-4 files: decompressed chunks kept between reads) for each
  // variable of every dataset, `bytes` in all. Nothing for classic files.
  void set_chunk_cache(uint64_t bytes);

  // Examples `ids` (ascending, distinct, each < examples) of dataset n: a set of ids.size()
  // examples whose example i is the file's example ids[i], validated like a whole read.
  // Consecutive ids are read as one range. Not thread-safe (netCDF is not): one thread at a time.
  ExampleSet read(size_t n, const std::vector<uint64_t>& ids,
                  ExampleReadStats* stats = nullptr) const;

  struct Vars;  // each dataset's variable ids (example_file.cpp)

 private:
  std::string path_;
  std::unique_ptr<NetcdfReader> reader_;
  std::vector<ExampleSet> headers_;
  std::vector<Vars> vars_;
};

}  // namespace nn
