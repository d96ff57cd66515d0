// The public PredictJob's making from a CDL command file and its path rules
// (include/nn/predict_job.h). What the job does is in api/prediction_run.cpp.
#include "nn/predict_job.h"

#include "api/command_file_impl.h"
#include "predict/layer_dump.h"
#include "predict/output_file.h"

namespace nn::api {

PredictJob predict_job(const CommandFile& cdl) {
  const CdlSpec& spec = cdl.impl().spec;
  const PredictionParameters& p = spec.prediction;
  PredictJob job;
  job.network = spec.network;
  job.data_files = spec.data;
  job.k = static_cast<uint32_t>(p.k);
  job.output = p.output;
  job.filter = p.filter;
  job.output_index = p.output_index;
  job.sample_index = p.sample_index;
  job.input_index = p.input_index;
  job.layer = p.layer;
  job.target = p.target;
  job.rank_input_items = p.rank_input_items;
  job.remap_index = p.remap_index;
  job.score_format = p.score_format;
  job.minibatch = p.minibatch;
  if (!spec.backend.empty()) job.backend = spec.backend;
  if (spec.device) job.device = *spec.device;
  if (spec.precision) job.precision = to_string(*spec.precision);
  job.force_precision = spec.force_precision;
  return job;
}

bool is_stdout_path(const std::string& path) {
  return nn::is_stdout_path(path);
}

bool is_netcdf_path(const std::string& path) {
  return nn::is_netcdf_path(path);
}

}  // namespace nn::api
