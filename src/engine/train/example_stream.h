// Streaming training input (docs/large-datasets.md, "Streaming training"): the training loop's
// minibatches come from windows of the dataset files read by a reader thread instead of from
// datasets held whole. The epoch order is the block shuffle of data/block_order.h; the reader
// keeps at most two windows in memory (the one being trained on and the next), so the data's
// resident memory is bounded by the window size whatever the file's size. Under data
// parallelism a rank reads only the examples its rows of each global minibatch take (the
// global order is the same on every rank, so -np 1 and -np N train the same model); with
// model-parallel layers every rank reads every example of its windows.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "data/block_order.h"
#include "distributed/row_split.h"
#include "io/example_file.h"
#include "model/batch_loader.h"

namespace nn {

// Where a bound slot's examples come from (io/example_file.h).
using StreamSource = StreamedDataset;

struct StreamSettings {
  uint64_t memory = 0;         // bytes the data may take in memory (0: memory_budget())
  uint64_t chunk = 0;          // examples per chunk (0: from the window, 1/64 of it)
  uint64_t window_chunks = 0;  // chunks per window (0: as many as `memory` allows)
};

// Read and wait times of an epoch (the reader's share of the time).
struct StreamStats {
  ExampleReadStats read;
  double read_seconds = 0;  // the reader thread reading
  double wait_seconds = 0;  // batch assembly waiting for the reader
  uint64_t windows = 0;
};

class ExampleStream {
 public:
  // `sources`: one per binding of `shell` (inputs, then outputs). `shell` binds datasets that
  // hold no arrays (headers), for the layers and losses; it must outlive the stream.
  ExampleStream(std::vector<StreamSource> sources, const BoundData& shell, uint32_t minibatch,
                StreamSettings settings);
  ~ExampleStream();
  ExampleStream(const ExampleStream&) = delete;
  ExampleStream& operator=(const ExampleStream&) = delete;

  const BlockLayout& layout() const { return layout_; }
  // "windows of 2.0M examples (64 chunks of 31250), 2 resident, 210 MiB each".
  std::string describe() const;

  // Starts an epoch at global minibatch `first_batch` (a resumed epoch). The reader thread draws
  // the windows' shuffles from `rng` (which end() hands back advanced) and reads ahead.
  // `loader` gives the denoising settings and seed; `rank`/`ranks` the rows this process takes
  // (`whole`: every row, for model-parallel layers).
  void begin(const Rng& rng, bool shuffle, uint64_t first_batch, const BatchLoader& loader,
             int rank, int ranks, bool whole);
  // Global minibatch b's rows for this rank (`whole`: all rows), in epoch order; b ascending.
  HostBatch assemble(uint64_t b, uint64_t step);
  // Ends the epoch (the reader thread stopped and joined); returns the generator after all the
  // epoch's window shuffles. Safe to call early (a stop mid-epoch) and twice.
  Rng end();
  const StreamStats& stats() const { return stats_; }

 private:
  struct Window;
  void read_windows();
  std::shared_ptr<Window> load(uint64_t w, std::vector<uint32_t> order, uint64_t p0);
  bool needed(uint64_t position) const;

  std::vector<StreamSource> sources_;
  std::vector<size_t> unique_of_;  // binding -> index among distinct (file, dataset) pairs
  std::vector<StreamSource> unique_;
  const BoundData& shell_;
  uint32_t minibatch_;
  BlockLayout layout_;
  double bytes_per_example_ = 0;

  // The epoch (set by begin, read by the reader thread).
  Rng rng_;
  bool shuffle_ = true, whole_ = false;
  uint64_t first_position_ = 0;
  int rank_ = 0, ranks_ = 1;
  std::vector<DenoiseSetting> denoise_;
  uint64_t seed_ = 0;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Window>> ready_;  // windows read, in order
  bool reader_done_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread reader_;
  StreamStats stats_;
};

// The shells (headers, no arrays) and sources of every dataset in `files`, for binding.
struct StreamedFiles {
  std::vector<ExampleSet> headers;
  std::vector<StreamSource> sources;  // parallel to headers
};
StreamedFiles open_streamed_files(const std::vector<std::string>& files);
// Sources for the bindings of `bound` (bound to `files.headers`), inputs then outputs.
std::vector<StreamSource> sources_for(const BoundData& bound, const StreamedFiles& files);

}  // namespace nn
