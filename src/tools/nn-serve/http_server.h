// nn-serve's HTTP/1.1 server: Boost.Beast over Boost.Asio (Debian's libboost-dev). One I/O
// thread reads and writes every connection, so an idle or slowly-sending client costs a socket
// and a buffer, not a thread; only complete requests go to the pool of handler threads (a
// handler may block for seconds, waiting for its batch). The declared Content-Length is checked
// against the body limit as soon as the header is in (413 or 400 at once, without waiting for a
// body); idle, header and body timeouts and a bound on open connections keep slow or hostile
// clients from holding it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace nn::tool {

struct HttpRequest {
  std::string method;  // as sent; HEAD is handed over as GET (the body is then not sent)
  std::string path;    // percent-decoded, without the query string
  std::string body;
  std::string inference_header_length{};  // the Inference-Header-Content-Length header, or ""
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string inference_header_length{};  // sent as Inference-Header-Content-Length when set
};

// One answered request, for the access log and the metrics. `refused`: the server answered by
// itself (malformed request, body over the limit, timed out, too many connections); `method`
// and `path` are "-" where the request line never arrived.
struct HttpExchange {
  std::string remote, method, path;
  int status = 0;
  double seconds = 0;  // from the complete request (or the refusal) to the answer written
  bool refused = false;
};

struct HttpLimits {
  uint64_t max_body = 1 << 20;   // bytes of a body; a larger Content-Length: 413 at once
  uint32_t max_header = 8192;    // bytes of request line and header fields (414 / 431)
  int max_connections = 4096;    // open at once; the next one gets 503 and is closed
  int handlers = 256;            // requests handled at once (a thread each)
  double idle_timeout_s = 60;    // a connection without a request in progress is closed
  double header_timeout_s = 10;  // from a request's first byte to the end of its header: 408
  double body_timeout_s = 30;    // from the end of the header to the end of the body: 408
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;
using HttpObserver = std::function<void(const HttpExchange&)>;

// Plain counts of what the server did, for the metrics.
struct HttpCounters {
  int64_t open = 0;         // connections open now
  uint64_t accepted = 0;    // connections accepted
  uint64_t over_limit = 0;  // connections refused with 503 (max_connections open)
  uint64_t timed_out = 0;   // connections closed by a timeout (idle, header or body)
};

class HttpServer {
 public:
  // Binds host:port (0: any free port) and listens; IoError when it cannot. Serves nothing
  // until start(). The handler runs on a handler thread; the observer on the I/O thread.
  HttpServer(const std::string& host, int port, const HttpLimits& limits, HttpHandler handler,
             HttpObserver observer);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  void start();
  // Stops accepting, closes every connection, lets the handlers finish, joins the threads.
  // Idempotent.
  void stop();
  HttpCounters counters() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nn::tool
