// nn-serve: answers recommendation and inference requests over HTTP with a trained network
// (docs/serving.md): POST /recommend with item names, the Open Inference Protocol v2 endpoints
// (over HTTP, and over gRPC with --grpc-port), concurrent requests batched together, the network
// reloaded on SIGHUP or when its file is replaced, SIGTERM draining. From a CDL file (Command
// "Serve") or flags:
//   nn-serve -n network.nc -i input.idx -o output.idx [--port 8080] [--grpc-port 8001]
// The flags become api::ServeOptions (nn/serve.h); the library serves, http_front.cpp listens,
// and grpc_front.cpp beside it (where the build has gRPC: NN_HAVE_GRPC).
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "common/cli_support.h"
#ifdef NN_HAVE_GRPC
#include "nn-serve/grpc_front.h"
#endif
#include "nn-serve/http_front.h"
#include "nn/command_file.h"
#include "nn/serve.h"

const char* const nn::tool::kToolName = "nn-serve";

namespace nn::tool {
namespace {

struct Flags {
  api::ServeOptions serve;
  FrontOptions front;
  std::string cdl, max_body, memory_limit;
  bool quiet = false;
};

// A PEM file's contents; UsageError naming the flag when it cannot be read or is not PEM.
std::string read_pem(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(flag + ": cannot read '" + path + "'");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.find("-----BEGIN ") == std::string::npos)
    throw UsageError(flag + ": '" + path + "' is not a PEM file (no -----BEGIN line)");
  return text;
}

void define_flags(CLI::App& app, Flags& f) {
  app.add_option("cdl", f.cdl, "CDL command file (JSON) with Command Serve")
      ->check(CLI::ExistingFile);
  app.add_option("-n,--network", f.serve.network, "trained network file (.nc)")
      ->check(CLI::ExistingFile);
  app.add_option("-i,--input-index", f.serve.input_index,
                 "input feature index (label<TAB>index): the item names requests use")
      ->check(CLI::ExistingFile);
  app.add_option("-o,--output-index", f.serve.output_index,
                 "output feature index: the item names answers use")
      ->check(CLI::ExistingFile);
  app.add_flag("--remap-index", f.serve.remap_index,
               "match -i/-o indices that list the network's items in another order to the "
               "network by name, instead of refusing them (CDL RemapIndex)");
  app.add_option("--host", f.serve.host, "address to listen on (default 127.0.0.1)");
  app.add_option("--port", f.serve.port, "port to listen on (default 8080; 0 = any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--grpc-port", f.serve.grpc_port,
                 "also serve the Open Inference Protocol over gRPC on this port (0 = any free "
                 "port), with grpc.health.v1 (default: no gRPC)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--grpc-tls-cert", f.serve.grpc_tls_cert,
                 "serve gRPC over TLS with this certificate chain (PEM; needs --grpc-tls-key)");
  app.add_option("--grpc-tls-key", f.serve.grpc_tls_key,
                 "the private key of --grpc-tls-cert (PEM)");
  app.add_option("--threads", f.serve.threads,
                 "evaluators running batches at once, and CPU threads (default: the CPUs this "
                 "process may use)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-batch", f.serve.max_batch,
                 "rows (users) per forward pass; 1 turns batching off (default 256)")
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--max-delay-ms", f.serve.max_delay_ms,
                 "a batch waits at most this long after its first request (default 2)")
      ->check(CLI::Range(0.0, 10000.0));
  app.add_option("-k,--top", f.serve.default_k, "k of a request that gives none (default 10)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-k", f.serve.max_k, "largest k a request may ask for (default 1000)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-body", f.max_body,
                 "largest request body, e.g. 1M or 65536 (default 1M; larger: 413)");
  app.add_option("--max-rows", f.serve.max_rows, "users or rows in one request (default 4096)")
      ->check(CLI::PositiveNumber);
  app.add_option("--model-name", f.serve.model_name,
                 "the name in /v2/models/<name> (default: the network's Name)");
  app.add_option("--connections", f.front.connections,
                 "requests handled at once, a thread each (default 256); idle and slow "
                 "connections hold no thread")
      ->check(CLI::Range(1, 65536));
  app.add_option("--max-connections", f.front.max_connections,
                 "connections open at once; the next one gets 503 and is closed (default 4096)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--idle-timeout", f.front.idle_timeout_s,
                 "seconds a connection may stay open with no request in progress (default 60)")
      ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--header-timeout", f.front.header_timeout_s,
                 "seconds from a request's first byte to the end of its header; later: 408 and "
                 "close (default 10)")
      ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--body-timeout", f.front.body_timeout_s,
                 "seconds from the end of a header to the end of its body, and for writing an "
                 "answer (default 30)")
      ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--watch-ms", f.front.watch_ms,
                 "check the network file for a replacement this often (default 1000; 0: only "
                 "on SIGHUP)")
      ->check(CLI::Range(0, 3600000));
  app.add_option("--backend", f.serve.backend, "cpu (default), cuda or auto");
  app.add_option("--device", f.serve.device, "CUDA device index")->check(CLI::NonNegativeNumber);
  app.add_flag("-q,--quiet", f.quiet,
               "no access log and no status lines, errors only (with --port 0 the line saying "
               "the port stays)");
  add_memory_limit_option(app, f.memory_limit);
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{
      "Serve a trained network over HTTP: POST /recommend {\"items\": [...], \"k\": 10},\n"
      "the Open Inference Protocol v2 (/v2/health/ready, /v2/models/<name>/infer; over gRPC\n"
      "too with --grpc-port), concurrent requests batched, the network reloaded on SIGHUP or\n"
      "when its file is replaced.\n"
      "  nn-serve serve.cdl                 run a CDL command file (Command: Serve)\n"
      "  nn-serve -n net.nc -i input.idx -o output.idx [--port 8080] [--grpc-port 8001]\n"
      "           [--threads N] [--max-batch 256] [--max-delay-ms 2]\n"
      "GET /metrics answers in the Prometheus text format.",
      "nn-serve"};
  Flags f;
  define_flags(app, f);
  int status = 0;
  if (parse_or_exit(app, rewrite_single_dash(argc, argv, {}), status)) return status;
  if (!f.cdl.empty()) {
    // The CDL's values, then every flag given beside it.
    if (!f.serve.network.empty()) throw UsageError("give either a CDL file or -n, not both");
    const api::CommandFile file = api::CommandFile::read(f.cdl);
    if (file.command() != "Serve")
      throw UsageError(f.cdl + ": Command is " + file.command() + "; nn-serve runs Serve");
    apply_memory_limit(f.memory_limit, file.memory_limit());
    api::ServeOptions from = api::serve_options(file);
    auto take = [&](const char* flag, auto& value, const auto& cdl_value) {
      if (app.get_option(flag)->count() == 0) value = cdl_value;
    };
    take("-i", f.serve.input_index, from.input_index);
    take("-o", f.serve.output_index, from.output_index);
    if (from.remap_index) f.serve.remap_index = true;
    take("--host", f.serve.host, from.host);
    take("--port", f.serve.port, from.port);
    take("--grpc-port", f.serve.grpc_port, from.grpc_port);
    take("--grpc-tls-cert", f.serve.grpc_tls_cert, from.grpc_tls_cert);
    take("--grpc-tls-key", f.serve.grpc_tls_key, from.grpc_tls_key);
    take("--threads", f.serve.threads, from.threads);
    take("--max-batch", f.serve.max_batch, from.max_batch);
    take("--max-delay-ms", f.serve.max_delay_ms, from.max_delay_ms);
    take("-k", f.serve.default_k, from.default_k);
    take("--max-k", f.serve.max_k, from.max_k);
    take("--model-name", f.serve.model_name, from.model_name);
    take("--backend", f.serve.backend, from.backend);
    take("--device", f.serve.device, from.device);
    if (f.max_body.empty()) f.serve.max_body = from.max_body;
    f.serve.network = from.network;
  } else {
    apply_memory_limit(f.memory_limit, std::nullopt);
  }
  if (f.serve.network.empty()) throw UsageError("need a CDL file or -n network.nc");
  if (f.serve.default_k > f.serve.max_k)
    throw UsageError("-k " + std::to_string(f.serve.default_k) + " is over --max-k " +
                     std::to_string(f.serve.max_k));
  if (!f.max_body.empty()) {
    const auto bytes = api::parse_byte_size(f.max_body);
    if (!bytes)
      throw UsageError("--max-body: expected a size such as 1M or 65536, got '" + f.max_body + "'");
    f.serve.max_body = *bytes;
  }
  f.front.host = f.serve.host;
  f.front.port = f.serve.port;
  f.front.max_body = f.serve.max_body;
  f.front.access_log = !f.quiet;
  f.front.quiet = f.quiet;
  const LogSink log = f.quiet ? null_log() : stream_log(stderr, "nn-serve: ");
  // Before any thread exists: the signals are then taken by serve_http's sigtimedwait alone.
  block_serve_signals();
  api::Service service(f.serve, log);
  const api::ServeOptions& s = service.options();
  log("serving " + s.network + " with " + std::to_string(s.threads) +
      " evaluator(s); batches of up to " + std::to_string(s.max_batch) + " rows or " +
      std::to_string(s.max_delay_ms).substr(0, std::to_string(s.max_delay_ms).find('.') + 3) +
      " ms");
  SideFront side;
  if ((!f.serve.grpc_tls_cert.empty() || !f.serve.grpc_tls_key.empty()) && s.grpc_port < 0)
    throw UsageError("--grpc-tls-cert/--grpc-tls-key secure the gRPC front: give --grpc-port too");
#ifdef NN_HAVE_GRPC
  std::unique_ptr<GrpcFront> grpc;
  if (s.grpc_port >= 0) {
    GrpcOptions g;
    g.host = s.host;
    g.port = s.grpc_port;
    g.handlers = f.front.connections;
    g.max_pending = f.front.max_connections;
    g.max_message = s.max_body;
    g.access_log = f.front.access_log;
    if (f.serve.grpc_tls_cert.empty() != f.serve.grpc_tls_key.empty())
      throw UsageError("--grpc-tls-cert and --grpc-tls-key go together: give both or neither");
    if (!f.serve.grpc_tls_cert.empty()) {
      g.tls_cert_chain = read_pem("--grpc-tls-cert (CDL GrpcTlsCert)", f.serve.grpc_tls_cert);
      g.tls_private_key = read_pem("--grpc-tls-key (CDL GrpcTlsKey)", f.serve.grpc_tls_key);
    }
    grpc = std::make_unique<GrpcFront>(service, g);
    // As for HTTP, a port chosen by the system is announced even with -q.
    const LogSink announce = f.quiet && s.grpc_port == 0 ? stream_log(stderr, "nn-serve: ") : log;
    announce("gRPC listening on " + s.host + ":" + std::to_string(grpc->port()) +
             (g.tls_cert_chain.empty() ? "" : " with TLS") +
             " (inference.GRPCInferenceService, grpc.health.v1.Health)");
    GrpcFront* front = grpc.get();
    side.metrics = [front] { return front->metrics(); };
    side.draining = [front] { front->draining(); };
    side.stop = [front] { front->stop(); };
  }
#else
  if (!f.serve.grpc_tls_cert.empty() || !f.serve.grpc_tls_key.empty())
    throw UsageError("--grpc-tls-cert/--grpc-tls-key: this nn-serve was built without gRPC");
  if (s.grpc_port >= 0)
    throw UsageError(
        "--grpc-port: this nn-serve was built without gRPC (Debian's libgrpc++-dev, "
        "protobuf-compiler-grpc; scripts/setup.sh installs them)");
#endif
  serve_http(service, f.front, log, side);
  return 0;
}

}  // namespace nn::tool
