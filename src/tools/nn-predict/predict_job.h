// A prediction run as the tool sees it (from a CDL file or DSSTNE predict's flags) and the
// function that carries it out: scores -> filtered top-K -> recommendation lines, ranking metrics
// or classifier reports, and optional dumps of any layer's activations.
#pragma once

#include <string>
#include <vector>

#include "core/log.h"

namespace nn::tool {

struct PredictJob {
  std::string network;                  // trained network .nc
  std::vector<std::string> data_files;  // NetCDF input datasets (CDL mode)
  std::string text_input;               // text examples to score (flags mode, -r)
  bool text_analog = false;             // keep values of the text input (default: indicator)
  std::string dataset_base;             // -d: input dataset is "<base>_input" (optional)
  std::string input_index;              // labels of input features (needed with text_input)
  std::string output_index;             // labels of output units (recs print labels)
  std::string sample_index;             // labels of examples (CDL mode)
  std::string filter;                   // items to exclude per sample (text format)
  bool filter_multiply = false;         // DSSTNE semantics: multiply scores by the filter values
  std::string output = "-";             // recommendations file; "-" = stdout
  std::string target;                   // NetCDF dataset with held-out items: print metrics
  std::string layer;                    // layer to score ("" = the output layer)
  bool write_recs = true;               // false: only dumps/reports (--dump without -s)
  bool classify = false;                // treat the target as one class per example
  std::string top_classes;              // per-example top classes file (recs format)
  std::string dump_layer;               // layer whose activations are dumped ("" = scored layer)
  std::string dump;                     // dump file: .nc => NetCDF dataset, otherwise text
  std::string score_format = "%.3f";
  uint32_t k = 10;
  uint32_t minibatch = 1024;
  std::string backend = "auto";
  int threads = 0;
  int device = 0;                       // CUDA device index (--device, CDL Device)
};

int run_predict_job(const PredictJob& job, const LogSink& log);

}  // namespace nn::tool
