// nn-serve's HTTP front (http_front.h). The HTTP server (http_server.h, Boost.Beast) reads
// requests on one I/O thread and hands complete ones to its handler threads, each of which calls
// Service::handle (a request waiting for its batch blocks only its own thread). What the server
// answers by itself (a body over the limit, a malformed request, a timeout) comes as a JSON error
// body too, and is counted in the metrics as "refused". GET /metrics gets the service's metrics
// and the server's connection counts.
#include "nn-serve/http_front.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <thread>

#include "nn-serve/http_server.h"
#include "nn/error.h"

namespace nn::tool {
namespace {

using Clock = std::chrono::steady_clock;

sigset_t serve_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

// What says the network file was replaced (nn-train writes it by rename: a new inode).
struct Stamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  time_t sec = 0;
  long nsec = 0;
  bool operator==(const Stamp& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && sec == o.sec && nsec == o.nsec;
  }
};
Stamp stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
}

// The HTTP server's own counts, after the service's families in GET /metrics.
std::string connection_metrics(const HttpCounters& c, int max_connections) {
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help, uint64_t value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
           name + " " + std::to_string(value) + "\n";
  };
  family("nn_serve_connections_open", "gauge", "HTTP connections open now.",
         uint64_t(std::max<int64_t>(0, c.open)));
  family("nn_serve_connections_max", "gauge", "Open connections allowed (--max-connections).",
         uint64_t(max_connections));
  family("nn_serve_connections_accepted_total", "counter", "HTTP connections accepted.",
         c.accepted);
  family("nn_serve_connections_refused_total", "counter",
         "Connections answered 503 and closed because --max-connections were open.", c.over_limit);
  family("nn_serve_connection_timeouts_total", "counter",
         "Connections closed by the idle, header or body timeout.", c.timed_out);
  return out;
}

}  // namespace

// Threads started before block_serve_signals (the MPI library's, made by the ProcessSession of
// tool_main.cpp) do not block the signals: one of them may take a SIGTERM while the serving
// thread is busy (reloading), and the default action would kill the process. Their handler
// passes the signal on to the serving thread, where it waits, blocked, for sigtimedwait.
static pthread_t serving_thread;
extern "C" void forward_to_serving_thread(int sig) {
  const int saved = errno;
  pthread_kill(serving_thread, sig);
  errno = saved;
}

void block_serve_signals() {
  serving_thread = pthread_self();
  const sigset_t set = serve_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  struct sigaction action {};
  action.sa_handler = forward_to_serving_thread;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int sig : {SIGHUP, SIGTERM, SIGINT}) sigaction(sig, &action, nullptr);
}

void serve_http(api::Service& service, const FrontOptions& o, const LogSink& log,
                const SideFront& side) {
  HttpLimits limits;
  limits.max_body = o.max_body;
  limits.handlers = o.connections;
  limits.max_connections = o.max_connections;
  limits.idle_timeout_s = o.idle_timeout_s;
  limits.header_timeout_s = o.header_timeout_s;
  limits.body_timeout_s = o.body_timeout_s;
  HttpServer* running = nullptr;  // for /metrics, set once the server exists
  auto answer = [&service, &running, &o, &side](const HttpRequest& req) {
    const api::ServeResponse r =
        service.handle({req.method, req.path, req.body, req.inference_header_length});
    HttpResponse res{r.status, r.content_type, r.body, r.inference_header_length};
    if (r.status == 200 && req.path == "/metrics" && running) {
      res.body += connection_metrics(running->counters(), o.max_connections);
      if (side.metrics) res.body += side.metrics();
    }
    return res;
  };
  const bool access_log = o.access_log;
  auto observe = [&service, access_log](const HttpExchange& x) {
    if (x.refused) service.count_refused(x.status, x.seconds);
    // One fprintf per line: lines of concurrent requests do not interleave.
    if (access_log)
      std::fprintf(stderr, "%s %s %s %d %.3f ms\n", x.remote.c_str(), x.method.c_str(),
                   x.path.c_str(), x.status, x.seconds * 1000.0);
  };
  HttpServer server(o.host, o.port, limits, answer, observe);
  running = &server;
  const int port = server.port();
  server.start();
  const api::ServeStats at_start = service.stats();
  // With -q and --port 0 the port is still announced: nobody could reach the server otherwise.
  const LogSink announce = o.quiet && o.port == 0 ? LogSink([](const std::string& line) {
    std::fprintf(stderr, "nn-serve: %s\n", line.c_str());
  })
                                                  : log;
  announce("listening on http://" + o.host + ":" + std::to_string(port) + " (model '" +
           service.model_name() + "' version " + std::to_string(at_start.version) + ")");

  // This thread waits for signals, and between them watches the network file.
  const sigset_t set = serve_signals();
  const timespec tick{o.watch_ms / 1000, long(o.watch_ms % 1000) * 1000000L};
  const timespec forever{3600, 0};
  Stamp seen = stamp(service.options().network), failed{};
  bool failed_once = false;
  auto reload = [&](const char* why) {
    try {
      service.reload();
      failed_once = false;
      (void)why;
    } catch (const std::exception& e) {
      failed = stamp(service.options().network);
      failed_once = true;
      log(std::string("reload (") + why + ") failed; still serving version " +
          std::to_string(service.stats().version) + ": " + e.what());
    }
  };
  for (;;) {
    const int sig = sigtimedwait(&set, nullptr, o.watch_ms > 0 ? &tick : &forever);
    if (sig == SIGTERM || sig == SIGINT) {
      log(std::string(sig == SIGTERM ? "SIGTERM" : "SIGINT") +
          ": draining (new requests get 503; accepted ones are answered)");
      if (side.draining) side.draining();
      break;
    }
    if (sig == SIGHUP) {
      reload("SIGHUP");
      seen = stamp(service.options().network);
      continue;
    }
    if (sig < 0 && errno != EAGAIN && errno != EINTR)
      throw IoError(std::string("sigtimedwait: ") + std::strerror(errno));
    if (o.watch_ms <= 0) continue;
    // A replaced file is reloaded once it has looked the same for a whole tick (a copy still
    // being written changes from one tick to the next), and not again after it failed.
    const Stamp now = stamp(service.options().network);
    const bool stable = now == seen;
    seen = now;
    if (stable && service.network_changed() && !(failed_once && now == failed))
      reload("the network file changed");
  }
  service.drain();
  if (side.stop) side.stop();
  server.stop();
  const api::ServeStats st = service.stats();
  log("stopped after " + std::to_string(st.requests) + " requests (" + std::to_string(st.rows) +
      " rows in " + std::to_string(st.batches) + " batches, " + std::to_string(st.reloads) +
      " reloads)");
}

}  // namespace nn::tool
