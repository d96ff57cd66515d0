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
// Triton's binary tensor extension over HTTP: which outputs go back as raw bytes after the JSON
// (the request's "parameters": {"binary_data_output": true}, or an output's
// "parameters": {"binary_data": true}).
struct BinaryOutputs {
  bool all = false;
  std::vector<std::string> names;
  bool wants(const std::string& output) const;
};
// The body of POST .../infer as a typed request: its fields and their JSON types checked (the
// model name and version come from the path, not from here). With the binary extension the JSON
// is the body's first `json_length` bytes (the Inference-Header-Content-Length header; npos: the
// whole body), and an input with "parameters": {"binary_data_size": n} takes its data from the
// next n bytes after it (little-endian FP32). `binary` (may be null) receives the outputs asked
// for as binary.
api::InferRequest parse_infer(const std::string& body, const std::shared_ptr<const Generation>& gen,
                              size_t json_length = std::string::npos,
                              BinaryOutputs* binary = nullptr);
// A typed request (from JSON, or from the gRPC front) checked against the model and made into
// jobs; the input's data is moved out of it. HttpError 400 or 413 naming the field at fault.
InferQuery make_infer(api::InferRequest& request, const std::shared_ptr<const Generation>& gen,
                      const api::ServeOptions& options);
// The answered jobs as outputs (moved out of them).
api::InferResponse infer_response(InferQuery& query, const std::string& model_name);
// The answer as JSON; the outputs `binary` names go after it as raw little-endian FP32, each with
// "parameters": {"binary_data_size": bytes} instead of "data", and `json_length` (when not null)
// receives the JSON's length (for the Inference-Header-Content-Length header; npos when nothing
// is binary).
std::string format_infer(const api::InferResponse& response, const BinaryOutputs& binary = {},
                         size_t* json_length = nullptr);

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
