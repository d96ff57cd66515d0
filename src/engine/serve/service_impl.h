// Service::Impl, shared by service.cpp (lifecycle, HTTP routing, reload, drain) and
// service_oip.cpp (the Open Inference Protocol's calls, typed, which the JSON endpoints and the
// gRPC front both go through). Its methods throw HttpError for a request they refuse; the public
// methods turn that into a status and count it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "nn/serve.h"
#include "serve/batcher.h"
#include "serve/generation.h"
#include "serve/metrics.h"
#include "serve/stats.h"

namespace nn::serve {
struct BinaryOutputs;
}  // namespace nn::serve

namespace nn::api {

// What an inference request did, for Triton's statistics: whether it was addressed to this model
// (a request for another model is not this model's failure), its rows and its time in the batcher.
struct RequestTrace {
  bool model = false;
  uint64_t rows = 0;
  serve::JobTimes times;
};

struct Service::Impl {
  ServeOptions options;
  LogSink log;
  int workers = 1;
  std::string name;
  mutable std::mutex mutex;  // guards current, draining, in_flight, requests and reloads
  std::condition_variable idle;
  std::shared_ptr<const serve::Generation> current;
  bool draining = false;
  uint64_t in_flight = 0, requests = 0, reloads = 0;
  std::mutex reload_mutex;        // one reload at a time
  serve::Metrics metrics;         // before the batcher, which records into it
  serve::ModelStats model_stats;  // likewise
  std::unique_ptr<serve::Batcher> batcher;

  std::shared_ptr<const serve::Generation> snapshot() const {
    std::lock_guard<std::mutex> lock(mutex);
    return current;
  }
  // 404 unless `model` is this service's model and `version` "" or the current version.
  void check_model(const std::string& model, const std::string& version) const;
  void check_ready() const;  // 503 while draining

  ServeResponse route(const ServeRequest& r, RequestTrace& trace);
  ServeResponse recommend(const std::string& body, RequestTrace& trace);
  // The typed inference every form of it goes through: checks, batcher, answer. `json_body`:
  // an HTTP body to parse first (serve::parse_infer, with `json_length` and `binary`).
  InferResponse infer(InferRequest& request, RequestTrace& trace,
                      const std::string* json_body = nullptr,
                      size_t json_length = std::string::npos,
                      serve::BinaryOutputs* binary = nullptr);
  // POST .../infer over HTTP: JSON, or Triton's binary tensor extension.
  ServeResponse infer_http(const ServeRequest& r, RequestTrace& trace);
  ModelConfig config() const;
  ModelStatistics statistics() const;

  // Counts a request in the metrics (and, for inference, in the model's statistics) and in the
  // request total.
  void count(serve::Endpoint endpoint, int status, std::chrono::steady_clock::time_point start,
             const RequestTrace* trace);
};

}  // namespace nn::api
