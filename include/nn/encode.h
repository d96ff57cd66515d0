// Public API: an image corpus -> NetCDF dataset files, as nn-encode makes them. CIFAR-10 and
// CIFAR-100 binary batches and MNIST/Fashion-MNIST IDX files (plain or gzip) become a dense UChar
// image input dataset and a sparse one-hot label output dataset in one file, optionally split in
// two (training and validation), plus a class-name index file (label<TAB>index). The data files
// and the index are written as one unit: none replaces its target unless all were written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/log.h"

namespace nn::api {

struct EncodeJob {
  std::string format;               // "cifar10", "cifar100" or "idx"
  std::vector<std::string> inputs;  // CIFAR batch files (concatenated), or the one IDX image file
  std::string labels;               // IDX label file
  std::string output;               // NetCDF file with both datasets; "-": standard output
  std::string output2;              // second file of a split ("" = no split)
  double split = 1.0;               // fraction of the images written to `output`
  uint64_t shuffle_seed = 0;        // shuffle before splitting (0 = keep file order)
  std::string input_name = "input";
  std::string output_name = "output";
  uint64_t limit = 0;       // the first N images only (0 = all)
  bool coarse = false;      // CIFAR-100: the 20 coarse labels instead of the 100 fine ones
  uint32_t classes = 10;    // IDX: number of classes
  std::string class_names;  // "cifar10", "fashion-mnist", "numeric", or a file with one name a
                            // line ("" = cifar10 names for cifar10, else numeric)
  std::string class_index;  // index file to write ("" = classes.idx beside `output`)
};

// Reads the corpus and writes the files, logging one line per file written. DataError for a
// corpus without images or malformed files; ArgumentError when the job's class names or split
// do not fit the corpus (the tool's usage errors: --class-names, --split).
void encode_images(const EncodeJob& job, const LogSink& log);

}  // namespace nn::api
