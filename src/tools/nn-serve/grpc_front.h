// nn-serve's gRPC front (--grpc-port): a grpc++ server on its own port beside the HTTP one,
// serving the Open Inference Protocol (grpc_oip.h) and gRPC's standard health service
// (grpc.health.v1.Health, grpc++'s own: SERVING while the Service is ready, NOT_SERVING once it
// drains). Requests go through the same Service, batcher and evaluators as HTTP's.
#pragma once

#include <memory>
#include <string>

#include "nn/serve.h"

namespace nn::tool {

struct GrpcOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port (port() says which)
  // Inference calls handled at once, a thread each (--connections), and in progress at all,
  // handled or waiting (--max-connections; more are refused with RESOURCE_EXHAUSTED).
  int handlers = 256, max_pending = 4096;
  // Bytes of a request message (--max-body); larger: RESOURCE_EXHAUSTED.
  uint64_t max_message = 1 << 20;
  bool access_log = true;  // a line per call on standard error, as HTTP's
  // TLS: the certificate chain and its private key, PEM text (both empty: plain gRPC).
  std::string tls_cert_chain, tls_private_key;
};

class GrpcFront {
 public:
  // Starts serving; IoError when the address cannot be listened on.
  GrpcFront(api::Service& service, const GrpcOptions& options);
  ~GrpcFront();  // stop()
  GrpcFront(const GrpcFront&) = delete;
  GrpcFront& operator=(const GrpcFront&) = delete;

  int port() const;
  // The health service answers NOT_SERVING from now on (the Service refuses new work itself).
  void draining();
  // Ends the calls in progress (they have their answers once the Service has drained) and stops.
  void stop();
  // The gRPC calls by method and code, for GET /metrics.
  std::string metrics() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nn::tool
