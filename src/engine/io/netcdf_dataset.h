// Reading and writing dataset files in DSSTNE's NetCDF layout (docs/file-formats.md, "Dataset
// files").
// This, io/sparse_dataset_writer.h (a sparse dataset written in slices, for streaming
// nn-generate) and the network file code are the only places that include <netcdf>.
#pragma once

#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "data/dataset.h"

namespace nn {

// Loads every dataset in the file (global attribute `datasets`, suffix-N names). Accepts both
// `dataTypeN` and DSSTNE's engine-written `datatypeN`, 32- or 64-bit start/end arrays.
// Throws DataError naming the file and variable/attribute on any problem.
std::vector<ExampleSet> read_datasets(const std::string& path);

// Writes the datasets (suffix 0..D-1) in the layout the reader expects. The file is written to a
// temporary name and renamed, so a failure never leaves a partial file at `path`.
void write_datasets(const std::string& path, const std::vector<ExampleSet>& sets);

// Writes the datasets into `out` without committing it, so a tool can commit the dataset and
// other outputs (index files) as one unit with commit_all(). out.target() names the file.
void write_datasets(AtomicFile& out, const std::vector<ExampleSet>& sets);

}  // namespace nn
