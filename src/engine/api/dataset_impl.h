// Engine side of the public Dataset (include/nn/dataset.h): the engine's DataSet.
#pragma once

#include "data/dataset.h"
#include "nn/dataset.h"

namespace nn::api {

struct Dataset::Impl {
  DataSet data;
  // Wraps an engine dataset (tools and train_cdl read files into these).
  static Dataset wrap(DataSet ds);
};

}  // namespace nn::api
