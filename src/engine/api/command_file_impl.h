// Engine side of the public CommandFile (include/nn/command_file.h): the parsed CdlSpec, read by
// the job builders (api/train_job.cpp, api/predict_job.cpp).
#pragma once

#include "config/cdl_spec.h"
#include "nn/command_file.h"

namespace nn::api {

struct CommandFile::Impl {
  std::string path;
  CdlSpec spec;
};

}  // namespace nn::api
