// nn-serve's gRPC front (grpc_front.h): a synchronous grpc++ server. Each call runs on a thread
// of gRPC's pool and blocks in the Service (waiting for its batch) as an HTTP handler thread does;
// the pool is bounded by a resource quota of `handlers` threads.
#include "nn-serve/grpc_front.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <chrono>

#include "nn-serve/grpc_oip.h"
#include "nn/error.h"

namespace nn::tool {

struct GrpcFront::Impl {
  std::unique_ptr<OipService> oip;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  bool stopped = false;
};

GrpcFront::GrpcFront(api::Service& service, const GrpcOptions& o)
    : impl_(std::make_unique<Impl>()) {
  impl_->oip = std::make_unique<OipService>(service);
  // grpc++'s own grpc.health.v1.Health (Check and Watch), which the server registers on build.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  // An IPv6 address is written in brackets before the port.
  const std::string address =
      (o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host) + ":" +
      std::to_string(o.port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &impl_->port);
  builder.RegisterService(impl_->oip.get());
  builder.SetMaxReceiveMessageSize(int(std::min<uint64_t>(o.max_message, INT32_MAX)));
  builder.SetMaxSendMessageSize(-1);  // answers are as large as the rows asked for
  grpc::ResourceQuota quota("nn-serve");
  quota.SetMaxThreads(std::max(2, o.handlers));
  builder.SetResourceQuota(quota);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || impl_->port == 0)
    throw IoError("gRPC: cannot listen on " + address +
                  " (in use, or not an address of this "
                  "machine?)");
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
  // The Service has drained by now: calls still in progress are only writing their answers.
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  impl_->server->Wait();
}

std::string GrpcFront::metrics() const {
  return impl_->oip->metrics();
}

}  // namespace nn::tool
