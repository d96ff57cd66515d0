// The Open Inference Protocol's gRPC service (inference.GRPCInferenceService, oip.proto) over an
// api::Service: each call is turned into the Service's typed call, which the JSON endpoints go
// through too, so gRPC answers what HTTP answers; a refusal's HTTP status becomes the gRPC status
// code that means the same (grpc_code), with the same message. gRPC's callback API: ModelInfer,
// which blocks until its batch has run, is handed to a pool of handler threads (as HTTP's
// requests are), where calls beyond the pool's threads wait in its queue; the other calls are
// answered at once on gRPC's own thread. Calls are counted by method and code for GET /metrics.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "nn-serve/http_pool.h"
#include "nn-serve/oip.grpc.pb.h"
#include "nn/serve.h"

namespace nn::tool {

// 400 INVALID_ARGUMENT, 404 NOT_FOUND, 405 UNIMPLEMENTED, 408 DEADLINE_EXCEEDED,
// 413 RESOURCE_EXHAUSTED, 500 INTERNAL, 503 UNAVAILABLE; 200 OK.
grpc::StatusCode grpc_code(int http_status);

class OipService final : public inference::GRPCInferenceService::CallbackService {
 public:
  // ModelInfer calls run on `pool`; at most `max_pending` of them are running or waiting at once
  // (more are refused with RESOURCE_EXHAUSTED). With `access_log`, a line per call on standard
  // error, as HTTP's: client, "gRPC", method, code, milliseconds.
  OipService(api::Service& service, HandlerPool& pool, uint64_t max_pending, bool access_log);

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext*,
                                       const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse*) override;
  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext*,
                                        const inference::ServerReadyRequest*,
                                        inference::ServerReadyResponse*) override;
  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext*,
                                       const inference::ModelReadyRequest*,
                                       inference::ModelReadyResponse*) override;
  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext*,
                                           const inference::ServerMetadataRequest*,
                                           inference::ServerMetadataResponse*) override;
  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext*,
                                          const inference::ModelMetadataRequest*,
                                          inference::ModelMetadataResponse*) override;
  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext*,
                                       const inference::ModelInferRequest*,
                                       inference::ModelInferResponse*) override;
  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext*,
                                        const inference::ModelConfigRequest*,
                                        inference::ModelConfigResponse*) override;
  grpc::ServerUnaryReactor* ModelStatistics(grpc::CallbackServerContext*,
                                            const inference::ModelStatisticsRequest*,
                                            inference::ModelStatisticsResponse*) override;

  // nn_serve_grpc_requests_total{method, code}, in the Prometheus text format.
  std::string metrics() const;

 private:
  enum Method {
    kServerLive,
    kServerReady,
    kModelReady,
    kServerMetadata,
    kModelMetadata,
    kModelInfer,
    kModelConfig,
    kModelStatistics,
    kMethods
  };
  static constexpr int kCodes = 17;  // grpc::StatusCode 0 (OK) to 16 (UNAUTHENTICATED)
  using Clock = std::chrono::steady_clock;
  // Counts (and logs) a call that began at `start`; returns its status.
  grpc::Status done(grpc::CallbackServerContext* context, Method method, const grpc::Status& status,
                    Clock::time_point start);
  // Finishes the call at once with `status`, counted and logged.
  grpc::ServerUnaryReactor* finish(grpc::CallbackServerContext* context, Method method,
                                   Clock::time_point start, const grpc::Status& status);
  grpc::Status model_infer(const inference::ModelInferRequest& in,
                           inference::ModelInferResponse& out);
  grpc::Status model_config(const inference::ModelConfigRequest& in,
                            inference::ModelConfigResponse& out);
  grpc::Status model_statistics(const inference::ModelStatisticsRequest& in,
                                inference::ModelStatisticsResponse& out);

  api::Service& service_;
  HandlerPool& pool_;
  const uint64_t max_pending_;
  const bool access_log_;
  std::atomic<uint64_t> pending_{0};
  std::atomic<uint64_t> calls_[kMethods][kCodes] = {};
};

}  // namespace nn::tool
