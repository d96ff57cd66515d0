// One sparse dataset file (DSSTNE's layout, docs/file-formats.md "Dataset files") written in
// slices straight to disk, for datasets larger than memory (streaming nn-generate): netCDF writes
// the temporary file of an AtomicFile by name, the caller hands over the arrays a slice at a time,
// and finish() appends the checksum trailer computed by reading the file back in blocks. The
// guarantees of the in-memory writer hold: nothing reaches the target until the caller commits,
// a failure removes the temporary file, and a full disk or a file-size limit is reported with the
// operating system's reason.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/atomic_file.h"
#include "data/dataset.h"

namespace nn {

// How the large variables are stored. The default is DSSTNE's and the in-memory writer's:
// contiguous arrays, no filters.
struct DatasetLayout {
  // Entries (or examples, for sparseStart/sparseEnd) per chunk; 0 = contiguous storage.
  uint64_t chunk_entries = 0;
  // zlib level 1..9 (netCDF's deflate filter, with byte shuffling first); 0 = none. Needs chunks.
  int deflate_level = 0;
};

class SparseDatasetWriter {
 public:
  // Defines the file for a sparse dataset like `header` (name, type, attributes, kind, width;
  // its arrays are ignored) with `examples` examples and `entries` entries in all. Throws
  // IoError naming out.target().
  SparseDatasetWriter(AtomicFile& out, const ExampleSet& header, uint64_t examples,
                      uint64_t entries, const DatasetLayout& layout);
  // Without finish(): closes netCDF; the caller's AtomicFile then removes the temporary file.
  ~SparseDatasetWriter();
  SparseDatasetWriter(const SparseDatasetWriter&) = delete;
  SparseDatasetWriter& operator=(const SparseDatasetWriter&) = delete;

  // sparseStart/sparseEnd of examples [first, first + start.size()).
  void put_offsets(uint64_t first, const std::vector<uint64_t>& start,
                   const std::vector<uint64_t>& end);
  // sparseIndex (and sparseData unless the dataset is Boolean) of entries
  // [first, first + index.size()).
  void put_entries(uint64_t first, const std::vector<uint32_t>& index,
                   const std::vector<float>& values);
  // Closes the netCDF file and appends its checksum trailer to `out` (not committed).
  void finish();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nn
