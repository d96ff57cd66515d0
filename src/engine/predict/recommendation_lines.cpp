// Recommendation lines (see recommendation_lines.h).
#include "predict/recommendation_lines.h"

#include <cstdio>
#include <limits>

#include "config/parse.h"
#include "core/error.h"

namespace nn {

std::string printf_format(std::string f) {
  if (f.empty()) f = "%.3f";
  if (f[0] != '%') f = "%" + f;  // DSSTNE's -p takes the conversion without '%' (4.3f)
  if (!valid_score_format(f))
    throw ConfigError("score format '" + f +
                      "': expected one floating-point conversion like %.3f or 4.3f");
  return f;
}

RecommendationLines::RecommendationLines(uint32_t k, std::string format, const FeatureIndex* items,
                                         std::function<std::string(uint64_t)> sample_name)
    : k_(k), format_(std::move(format)), items_(items), sample_name_(std::move(sample_name)) {}

const std::string& RecommendationLines::line(uint64_t e, const uint32_t* ranked,
                                             const float* scores) {
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  char num[64];
  line_ = sample_name_(e);
  line_ += '\t';
  for (uint32_t j = 0; j < k_ && ranked[j] != kNone; ++j) {
    if (items_)
      line_ += items_->view(ranked[j]);  // no copy of the label per item
    else
      line_ += std::to_string(ranked[j]);
    line_ += ',';
    std::snprintf(num, sizeof num, format_.c_str(), double(scores[j]));
    line_ += num;
    line_ += ':';
  }
  line_ += '\n';
  return line_;
}

}  // namespace nn
