// The JSON of Triton's model configuration and statistics endpoints
// (GET /v2/models/<name>/config and /stats), in the shape Triton answers them, so that its tools
// (perf_analyzer, tritonclient.http) read nn-serve's as they read Triton's.
#pragma once

#include <string>
#include <vector>

#include "nn/serve.h"

namespace nn::serve {

// {"name", "platform", "backend", "max_batch_size", "input": [{"name", "data_type": "TYPE_FP32",
// "format", "dims"}], "output": [...], "dynamic_batching": {...}}
std::string format_config(const api::ModelConfig& config);
// {"model_stats": [{"name", "version", "last_inference", "inference_count", "execution_count",
// "inference_stats": {"success": {"count", "ns"}, ...}, "batch_stats": [...]}]}
std::string format_statistics(const std::vector<api::ModelStatistics>& models);

}  // namespace nn::serve
