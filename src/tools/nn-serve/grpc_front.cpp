// nn-serve's gRPC front (grpc_front.h): a grpc++ server with the callback API. Inference calls
// run on a pool of `handlers` threads of our own, where they block in the Service (waiting for
// their batch) as HTTP's requests do, and calls beyond them wait in its queue; gRPC's own threads
// only read and write. (gRPC's synchronous server would refuse calls beyond its thread quota
// with RESOURCE_EXHAUSTED instead of queueing them.)
#include "nn-serve/grpc_front.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <chrono>

#include "nn-serve/grpc_oip.h"
#include "nn-serve/http_pool.h"
#include "nn/error.h"

namespace nn::tool {

struct GrpcFront::Impl {
  std::unique_ptr<HandlerPool> pool;
  std::unique_ptr<OipService> oip;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  bool stopped = false;
};

GrpcFront::GrpcFront(api::Service& service, const GrpcOptions& o)
    : impl_(std::make_unique<Impl>()) {
  impl_->pool = std::make_unique<HandlerPool>(std::max(1, o.handlers));
  impl_->oip = std::make_unique<OipService>(service, *impl_->pool,
                                            uint64_t(std::max(1, o.max_pending)), o.access_log);
  // grpc++'s own grpc.health.v1.Health (Check and Watch), which the server registers on build.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  // An IPv6 address is written in brackets before the port.
  const std::string address =
      (o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host) + ":" +
      std::to_string(o.port);
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!o.tls_cert_chain.empty()) {
    grpc::SslServerCredentialsOptions tls;
    tls.pem_key_cert_pairs.push_back({o.tls_private_key, o.tls_cert_chain});
    credentials = grpc::SslServerCredentials(tls);
  }
  builder.AddListeningPort(address, credentials, &impl_->port);
  // gRPC binds with SO_REUSEPORT by default: a second server on a port in use would start and
  // share its connections instead of failing.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(impl_->oip.get());
  builder.SetMaxReceiveMessageSize(int(std::min<uint64_t>(o.max_message, INT32_MAX)));
  builder.SetMaxSendMessageSize(-1);  // answers are as large as the rows asked for
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || impl_->port == 0)
    throw IoError("gRPC: cannot listen on " + address +
                  (o.tls_cert_chain.empty()
                       ? " (in use, or not an address of this machine?)"
                       : " (in use, not an address of this machine, or a TLS certificate and key "
                         "that do not match?)"));
  if (auto* health = impl_->server->GetHealthCheckService()) {
    health->SetServingStatus("", service.ready());
    health->SetServingStatus("inference.GRPCInferenceService", service.ready());
  }
}

GrpcFront::~GrpcFront() {
  stop();
}

int GrpcFront::port() const {
  return impl_->port;
}

void GrpcFront::draining() {
  if (auto* health = impl_->server->GetHealthCheckService()) health->SetServingStatus(false);
}

void GrpcFront::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  // The Service has drained by now: calls still queued are answered UNAVAILABLE at once, and
  // those in progress are only writing their answers. Shutdown waits for them (up to 5 s), then
  // the pool's threads end.
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  impl_->pool->stop();
  impl_->server->Wait();
}

std::string GrpcFront::metrics() const {
  return impl_->oip->metrics();
}

}  // namespace nn::tool
