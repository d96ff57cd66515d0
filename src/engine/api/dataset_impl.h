// Engine side of the public Dataset (include/nn/dataset.h): the engine's ExampleSet.
#pragma once

#include "data/dataset.h"
#include "nn/dataset.h"

namespace nn::api {

struct Dataset::Impl {
  ExampleSet data;
  // Wraps an engine dataset (tools and train_cdl read files into these).
  static Dataset wrap(ExampleSet ds);
};

}  // namespace nn::api
