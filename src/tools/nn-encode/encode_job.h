// An image-encoding run as the tool sees it (corpus format, files, dataset names, split) and the
// function that carries it out: read the corpus, write one or two NetCDF files holding a dense
// image input and a sparse one-hot label output, and the class-name index file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/log.h"

namespace nn::tool {

struct EncodeJob {
  std::string format;               // cifar10, cifar100 or idx
  std::vector<std::string> inputs;  // CIFAR batch files, or the one IDX image file
  std::string labels;               // IDX label file
  std::string output;               // NetCDF file (both datasets)
  std::string output2;              // second file of a split ("" = no split)
  double split = 1.0;               // fraction of the images written to `output`
  uint64_t shuffle_seed = 0;        // shuffle before splitting (0 = keep file order)
  std::string input_name = "input";
  std::string output_name = "output";
  uint64_t limit = 0;       // first N images only (0 = all)
  bool coarse = false;      // CIFAR-100: coarse (20) instead of fine (100) labels
  uint32_t classes = 10;    // IDX: number of classes
  std::string class_names;  // cifar10, fashion-mnist, numeric, or a file ("" = default)
  std::string class_index;  // label<TAB>index file ("" = classes.idx beside output)
};

int run_encode_job(const EncodeJob& job, const LogSink& log);

}  // namespace nn::tool
