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

// A checked OIP v2 inference request: one job per requested output.
struct InferQuery {
  std::string id;  // echoed when given
  std::vector<std::unique_ptr<Job>> jobs;
};
// The JSON body of POST .../infer as a typed request: its fields and their JSON types checked
// (the model name and version come from the path, not from here).
api::InferRequest parse_infer(const std::string& body,
                              const std::shared_ptr<const Generation>& gen);
// A typed request (from JSON, or from the gRPC front) checked against the model and made into
// jobs; the input's data is moved out of it. HttpError 400 or 413 naming the field at fault.
InferQuery make_infer(api::InferRequest& request, const std::shared_ptr<const Generation>& gen,
                      const api::ServeOptions& options);
// The answered jobs as outputs (moved out of them).
api::InferResponse infer_response(InferQuery& query, const std::string& model_name);
std::string format_infer(const api::InferResponse& response);

// GET /v2: the server's name, version and extensions.
api::ServerMetadata server_metadata();
std::string format_server_metadata(const api::ServerMetadata& meta);

// The inputs and outputs with their shapes (-1: any batch size).
api::ModelMetadata model_metadata(const Generation& gen, const std::string& model_name);
// GET /v2/models/<name>
std::string format_metadata(const api::ModelMetadata& meta);

// {"error": message}
std::string error_body(const std::string& message);

}  // namespace nn::serve
