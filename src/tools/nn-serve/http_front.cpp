// nn-serve's HTTP front (http_front.h). cpp-httplib runs each connection on a thread of its pool
// (so a request waiting for its batch blocks only its own connection); every route goes to
// Service::handle, which answers in JSON. What httplib answers by itself (a body over the limit,
// a request it cannot parse) gets a JSON error body from the error handler.
#include "nn-serve/http_front.h"

#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <thread>

#include "nn/error.h"

namespace nn::tool {
namespace {

using Clock = std::chrono::steady_clock;

// Start of the request this connection thread is answering (set before routing, read by the
// logger after the response is written).
thread_local Clock::time_point request_start;
thread_local bool request_started = false;

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

std::string json_error(const std::string& message) {
  std::string out = "{\"error\":\"";
  for (char c : message) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (static_cast<unsigned char>(c) >= 0x20)
      out += c;
  }
  return out + "\"}";
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

void serve_http(api::Service& service, const FrontOptions& o, const LogSink& log) {
  httplib::Server server;
  const int connections = o.connections;
  server.new_task_queue = [connections] { return new httplib::ThreadPool(size_t(connections)); };
  server.set_payload_max_length(size_t(o.max_body));
  server.set_keep_alive_max_count(100000);  // a client keeps its connection; a thread serves it
  server.set_tcp_nodelay(true);
  // Debian's libcpp-httplib listens with a backlog of 5 (compiled in): more clients connecting at
  // once lose their SYN and retry a second later. The listening socket is noted here and given a
  // full backlog after binding (listen() again on a listening socket changes its backlog).
  int listen_fd = -1;
  server.set_socket_options([&listen_fd](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = int(sock);
  });

  auto answer = [&service](const httplib::Request& req, httplib::Response& res) {
    const api::ServeResponse r = service.handle({req.method, req.path, req.body});
    res.status = r.status;
    res.set_content(r.body, "application/json");
  };
  for (const char* pattern : {".*"}) {
    server.Get(pattern, answer);
    server.Post(pattern, answer);
    server.Put(pattern, answer);
    server.Delete(pattern, answer);
    server.Patch(pattern, answer);
  }
  server.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    request_start = Clock::now();
    request_started = true;
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // httplib's own refusals (413 over --max-body, 400 unparsable request line) in JSON too.
  server.set_error_handler([&o](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // the service's answer
    std::string message = "HTTP status " + std::to_string(res.status);
    if (res.status == 400) message = "malformed HTTP request";
    if (res.status == 413)
      message = "request body over " + std::to_string(o.max_body) + " bytes (--max-body)";
    if (res.status == 414) message = "request line too long";
    res.set_content(json_error(message), "application/json");
  });
  if (o.access_log)
    server.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      const double ms =
          request_started
              ? std::chrono::duration<double, std::milli>(Clock::now() - request_start).count()
              : 0.0;
      request_started = false;
      // One fprintf per line: lines of concurrent requests do not interleave.
      std::fprintf(stderr, "%s %s %s %d %.3f ms\n", req.remote_addr.c_str(), req.method.c_str(),
                   req.path.c_str(), res.status, ms);
    });

  int port = o.port;
  if (port == 0) {
    port = server.bind_to_any_port(o.host);
    if (port < 0) throw IoError("cannot listen on " + o.host + ": no free port");
  } else if (!server.bind_to_port(o.host, port)) {
    throw IoError("cannot listen on " + o.host + ":" + std::to_string(port) +
                  " (in use, or not an address of this host)");
  }
  if (listen_fd >= 0) ::listen(listen_fd, SOMAXCONN);
  std::thread listener([&server] { server.listen_after_bind(); });
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
  server.stop();
  listener.join();
  const api::ServeStats st = service.stats();
  log("stopped after " + std::to_string(st.requests) + " requests (" + std::to_string(st.rows) +
      " rows in " + std::to_string(st.batches) + " batches, " + std::to_string(st.reloads) +
      " reloads)");
}

}  // namespace nn::tool
