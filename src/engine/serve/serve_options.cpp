// ServeOptions from a CDL command file with Command "Serve" (include/nn/serve.h).
#include "api/command_file_impl.h"
#include "core/error.h"
#include "nn/serve.h"

namespace nn::api {

ServeOptions serve_options(const CommandFile& cdl) {
  const CdlSpec& spec = cdl.impl().spec;
  if (spec.command != Command::Serve)
    throw ConfigError(cdl.path() + ": Command is " + cdl.command() + "; expected Serve");
  const ServeParameters& p = spec.serve;
  ServeOptions o;
  o.network = spec.network;
  o.input_index = p.input_index;
  o.output_index = p.output_index;
  o.remap_index = p.remap_index;
  o.model_name = p.model_name;
  if (!spec.backend.empty()) o.backend = spec.backend;
  if (spec.device) o.device = *spec.device;
  if (p.threads > 0) o.threads = p.threads;
  if (p.max_batch > 0) o.max_batch = p.max_batch;
  if (p.max_delay_ms >= 0) o.max_delay_ms = p.max_delay_ms;
  if (p.k > 0) o.default_k = p.k;
  if (p.max_k > 0) o.max_k = p.max_k;
  if (p.max_body > 0) o.max_body = p.max_body;
  if (!p.host.empty()) o.host = p.host;
  if (p.port >= 0) o.port = p.port;
  if (p.grpc_port >= 0) o.grpc_port = p.grpc_port;
  o.grpc_tls_cert = p.grpc_tls_cert;
  o.grpc_tls_key = p.grpc_tls_key;
  return o;
}

}  // namespace nn::api
