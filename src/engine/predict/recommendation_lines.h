// The text a prediction job writes per example, DSSTNE's recommendation format:
//   sample<TAB>item,score:item,score:...:
// with samples and items named from their index files (numbers without one) and scores printed
// with a checked printf conversion.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "data/text_examples.h"

namespace nn {

// "%.3f", or DSSTNE's "4.3f" without the '%', as a checked printf conversion ("" => "%.3f");
// ConfigError unless it is one floating-point conversion.
std::string printf_format(std::string format);

class RecommendationLines {
 public:
  // `k` results per example; `items` labels the units (null: unit numbers); `sample_name`
  // names example e. `format` is a checked conversion (printf_format).
  RecommendationLines(uint32_t k, std::string format, const FeatureIndex* items,
                      std::function<std::string(uint64_t)> sample_name);
  // Example e's line (newline included) from its k ranked units and scores; a unit of
  // UINT32_MAX ends the list early. Valid until the next call.
  const std::string& line(uint64_t e, const uint32_t* ranked, const float* scores);

 private:
  uint32_t k_;
  std::string format_;
  const FeatureIndex* items_;
  std::function<std::string(uint64_t)> sample_name_;
  std::string line_;
};

}  // namespace nn
