// The Open Inference Protocol's gRPC service (inference.GRPCInferenceService, oip.proto) over an
// api::Service: each call is turned into the Service's typed call, which the JSON endpoints go
// through too, so gRPC answers what HTTP answers; a refusal's HTTP status becomes the gRPC status
// code that means the same (grpc_code), with the same message. Calls are counted by method and
// code for GET /metrics.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <string>

#include "nn-serve/oip.grpc.pb.h"
#include "nn/serve.h"

namespace nn::tool {

// 400 INVALID_ARGUMENT, 404 NOT_FOUND, 405 UNIMPLEMENTED, 408 DEADLINE_EXCEEDED,
// 413 RESOURCE_EXHAUSTED, 500 INTERNAL, 503 UNAVAILABLE; 200 OK.
grpc::StatusCode grpc_code(int http_status);

class OipService final : public inference::GRPCInferenceService::Service {
 public:
  explicit OipService(api::Service& service);

  grpc::Status ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*,
                          inference::ServerLiveResponse*) override;
  grpc::Status ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                           inference::ServerReadyResponse*) override;
  grpc::Status ModelReady(grpc::ServerContext*, const inference::ModelReadyRequest*,
                          inference::ModelReadyResponse*) override;
  grpc::Status ServerMetadata(grpc::ServerContext*, const inference::ServerMetadataRequest*,
                              inference::ServerMetadataResponse*) override;
  grpc::Status ModelMetadata(grpc::ServerContext*, const inference::ModelMetadataRequest*,
                             inference::ModelMetadataResponse*) override;
  grpc::Status ModelInfer(grpc::ServerContext*, const inference::ModelInferRequest*,
                          inference::ModelInferResponse*) override;
  grpc::Status ModelConfig(grpc::ServerContext*, const inference::ModelConfigRequest*,
                           inference::ModelConfigResponse*) override;
  grpc::Status ModelStatistics(grpc::ServerContext*, const inference::ModelStatisticsRequest*,
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
  grpc::Status done(Method method, const grpc::Status& status);
  grpc::Status done(Method method, const api::OipStatus& status);

  api::Service& service_;
  std::atomic<uint64_t> calls_[kMethods][kCodes] = {};
};

}  // namespace nn::tool
