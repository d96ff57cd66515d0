// The JSON of the endpoints (docs/serving.md): request bodies checked and turned into batcher
// jobs, and answers written back. Every malformed body, unknown field or out-of-range value is
// an HttpError 400 whose message names the field ("users[2].k: must be between 1 and 1000").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/serve.h"
#include "serve/batcher.h"
#include "serve/generation.h"

namespace nn::serve {

// One user of a /recommend request.
struct UserQuery {
  std::vector<std::string> unknown;  // item names the input index does not know
  uint32_t k = 0;
};

// A parsed /recommend body: one job with a row per user (columns ascending), and what the
// answer needs besides the job's results.
struct RecommendQuery {
  bool list = false;  // the body was a JSON list: the answer is one too
  std::vector<UserQuery> users;
  std::unique_ptr<Job> job;
};
RecommendQuery parse_recommend(const std::string& body,
                               const std::shared_ptr<const Generation>& gen,
                               const api::ServeOptions& options);
std::string format_recommend(const RecommendQuery& query);

// A parsed OIP v2 infer body: one job per requested output.
struct InferQuery {
  std::string id;  // echoed when given
  std::vector<std::unique_ptr<Job>> jobs;
};
InferQuery parse_infer(const std::string& body, const std::shared_ptr<const Generation>& gen,
                       const api::ServeOptions& options);
std::string format_infer(const InferQuery& query, const std::string& model_name);

// GET /v2/models/<name>: inputs and outputs with their shapes (-1: any batch size).
std::string format_metadata(const Generation& gen, const std::string& model_name);

// {"error": message}
std::string error_body(const std::string& message);

}  // namespace nn::serve
