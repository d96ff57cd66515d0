// nn-serve's HTTP front: an event-driven HTTP server (http_server.h) in front of an api::Service,
// with one access-log line per request, SIGHUP and a replaced network file reloading the model,
// and SIGTERM/SIGINT draining before exit.
#pragma once

#include <functional>
#include <string>

#include "nn/log.h"
#include "nn/serve.h"

namespace nn::tool {

struct FrontOptions {
  std::string host = "127.0.0.1";
  int port = 8080;               // 0: any free port (the log line says which)
  int connections = 256;         // requests handled at once (a thread each)
  int max_connections = 4096;    // open at once; more get 503
  double idle_timeout_s = 60;    // a connection with no request in progress is closed
  double header_timeout_s = 10;  // a request's header must be in this long after its first byte
  double body_timeout_s = 30;    // and its body this long after the header
  uint64_t max_body = 1 << 20;
  int watch_ms = 1000;  // how often the network file is checked (0: never, SIGHUP only)
  bool access_log = true;
  bool quiet = false;  // no status lines either, except "listening on" for --port 0
};

// Another front beside HTTP (gRPC): what it adds to GET /metrics, what it does when draining
// begins (before the Service drains) and how it stops (after). Any of them may be empty.
struct SideFront {
  std::function<std::string()> metrics;
  std::function<void()> draining, stop;
};

// The calling thread must have called block_serve_signals before starting any thread of its own:
// SIGHUP, SIGTERM and SIGINT are then blocked everywhere but in this function's sigtimedwait
// (threads the process had before pass them on to this one). Returns when a
// SIGTERM or SIGINT has drained the service; `log` gets the status lines (listening, reloads,
// draining), the access log goes to standard error unless turned off.
void serve_http(api::Service& service, const FrontOptions& options, const LogSink& log,
                const SideFront& side = {});
void block_serve_signals();

}  // namespace nn::tool
