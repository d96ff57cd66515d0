// nn-serve's HTTP/1.1 server (http_server.h). Every connection is a chain of asynchronous
// operations on the one I/O thread:
//   wait for a first byte (idle timeout) -> read the header (header timeout) -> read the body
//   (body timeout) -> hand the request to a handler thread -> write the answer -> again.
// Beast's parser checks Content-Length as the header completes: a malformed or negative value is
// bad_content_length, one above the body limit is body_limit, so both are answered before any
// body is read. Errors the server answers itself close the connection afterwards, reading (and
// dropping) what the client still sends for a moment first, so that it sees the answer rather
// than a reset.
#include "nn-serve/http_server.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <vector>

#include "nn-serve/http_pool.h"
#include "nn/error.h"

namespace nn::tool {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

Clock::duration after(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
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

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The target's path, without the query string, %XX decoded ('+' stays: it is not a space in a
// path); a '%' not followed by two hex digits stays as it is.
std::string decode_path(beast::string_view target) {
  const beast::string_view path = target.substr(0, target.find('?'));
  std::string out;
  out.reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size()) {
      const int hi = hex_digit(path[i + 1]), lo = hex_digit(path[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += char(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += path[i];
  }
  return out;
}

// Each accepted connection needs a descriptor: the soft limit (often 1024) is raised to the hard
// one, so that max_connections open sockets do not run out of them.
void raise_descriptor_limit() {
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

class Connection;

}  // namespace

struct HttpServer::Impl {
  HttpLimits limits;
  HttpHandler handler;
  HttpObserver observer;
  // Declared before the io_context: connections still queued in it when it is destroyed take
  // themselves out of this set and the counts.
  std::unordered_set<Connection*> connections;  // touched on the I/O thread only
  std::atomic<int64_t> open{0};
  std::atomic<uint64_t> accepted{0}, over_limit{0}, timed_out{0};
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  // Keeps io.run() going while a connection has no operation pending, its request being with a
  // handler; released once the handlers have finished.
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> busy;
  std::unique_ptr<HandlerPool> pool;
  std::thread io_thread;
  std::mutex done_mutex;
  std::condition_variable done_cv;
  bool io_done = false;  // io.run() returned: no connection and no listener left
  int port = 0;
  bool started = false, stopped = false;

  void accept();
};

namespace {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(HttpServer::Impl& server, tcp::socket socket)
      : server_(server), stream_(std::move(socket)), timer_(server.io) {
    beast::error_code ec;
    const tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    remote_ = ec ? "-" : peer.address().to_string();
    server_.connections.insert(this);
    ++server_.open;
  }
  ~Connection() {
    server_.connections.erase(this);
    --server_.open;
  }

  void start() { wait_request(); }

  // Over max_connections: a 503 and close, without reading a request.
  void refuse_overloaded() {
    refuse(503, "too many connections (at most " + std::to_string(server_.limits.max_connections) +
                    " open; --max-connections); try again");
  }

  // Stopping: an idle connection is closed now; one whose request is being answered gets its
  // answer first (with Connection: close), so that the requests a drain waited for are delivered.
  void shut() {
    closing_ = true;
    if (!busy_) close_now();
  }

  void close_now() {
    timer_.cancel();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

 private:
  const HttpLimits& limits() const { return server_.limits; }

  // Each phase of a connection runs under a deadline. Beast's own stream timeouts close the
  // socket when they expire, which would leave no way to answer 408; this timer cancels the
  // pending operation instead, which then ends with operation_aborted and timed_out_ set.
  void arm(double seconds) {
    timed_out_ = false;
    timer_.expires_after(after(seconds));  // cancels the previous wait
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;  // re-armed, disarmed or closed
      self->timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
  }
  bool expired(beast::error_code ec) const {
    return timed_out_ && ec == asio::error::operation_aborted;
  }

  // Between requests: nothing is owed, so the idle timeout applies until a first byte comes.
  void wait_request() {
    method_ = path_ = "-";
    head_ = false;
    if (buffer_.size() > 0) return read_header();  // the next request is already here
    arm(limits().idle_timeout_s);
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) {
                                if (self->expired(ec)) ++self->server_.timed_out;
                                return self->close_now();
                              }
                              self->buffer_.commit(n);
                              self->read_header();
                            });
  }

  void read_header() {
    parser_.emplace();
    parser_->header_limit(limits().max_header);
    parser_->body_limit(limits().max_body);
    arm(limits().header_timeout_s);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec) return on_read_error(ec, "header", "--header-timeout", limits().header_timeout_s);
    const auto& req = parser_->get();
    method_ = std::string(req.method_string());
    path_ = decode_path(req.target());
    if (parser_->is_done()) return dispatch();
    // A client that asks first (curl does for larger bodies) hears that it may send the body.
    if (req.version() >= 11 && beast::iequals(req[http::field::expect], "100-continue")) {
      arm(limits().body_timeout_s);
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(stream_, asio::buffer(kContinue, sizeof kContinue - 1),
                        [self = shared_from_this()](beast::error_code ec, size_t) {
                          if (ec) return self->close_now();
                          self->read_body();
                        });
      return;
    }
    read_body();
  }

  void read_body() {
    arm(limits().body_timeout_s);
    http::async_read(
        stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
          if (ec)
            return self->on_read_error(ec, "body", "--body-timeout", self->limits().body_timeout_s);
          self->dispatch();
        });
  }

  // What went wrong while reading a request: answered where there is someone to answer.
  void on_read_error(beast::error_code ec, const char* part, const char* flag, double seconds) {
    if (parser_ && !parser_->get().method_string().empty()) {  // the request line was read
      method_ = std::string(parser_->get().method_string());
      path_ = decode_path(parser_->get().target());
    }
    if (ec == http::error::body_limit)
      return refuse(
          413, "request body over " + std::to_string(limits().max_body) + " bytes (--max-body)");
    if (ec == http::error::bad_content_length)
      return refuse(400, "malformed HTTP request: bad Content-Length");
    if (ec == http::error::header_limit) {
      // The request line alone over the limit is 414, as before; otherwise the fields are.
      const auto data = static_cast<const char*>(buffer_.data().data());
      const beast::string_view seen(data, buffer_.size());
      const size_t eol = seen.find("\r\n");
      if (eol == beast::string_view::npos || eol >= limits().max_header)
        return refuse(414, "request line too long");
      return refuse(431,
                    "request header fields over " + std::to_string(limits().max_header) + " bytes");
    }
    if (expired(ec)) {
      ++server_.timed_out;
      return refuse(408, std::string("request ") + part + " not complete within " +
                             seconds_text(seconds) + " s (" + flag + ")");
    }
    // The client went away (or the server is stopping): nobody to answer.
    if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
        ec.category() != http::make_error_code(http::error::bad_method).category())
      return close_now();
    refuse(400, "malformed HTTP request");
  }

  void dispatch() {
    auto& req = parser_->get();
    HttpRequest r;
    head_ = req.method() == http::verb::head;
    r.method = head_ ? "GET" : method_;
    r.path = path_;
    r.body = std::move(req.body());
    r.inference_header_length = std::string(req["Inference-Header-Content-Length"]);
    keep_alive_ = req.keep_alive();
    parser_.reset();
    started_ = Clock::now();
    busy_ = true;
    timer_.cancel();  // the handler may take a while; the client waits
    server_.pool->submit([self = shared_from_this(), r = std::move(r)]() mutable {
      HttpResponse res;
      try {
        res = self->server_.handler(r);
      } catch (const std::exception& e) {
        res = {500, "application/json", json_error(e.what())};
      }
      self->serialize(res, !self->keep_alive_ || self->closing_.load());
      // Straight to the socket from this thread, to spare the answer a hop through the I/O
      // thread: while its request is with a handler a connection has no operation pending and
      // nothing else touches its socket, and MSG_DONTWAIT never blocks. What the kernel does not
      // take at once (a large answer to a slow reader) the I/O thread writes.
      const int fd = self->stream_.socket().native_handle();
      size_t sent = 0;
      int error = 0;
      while (sent < self->out_.size()) {
        const ssize_t n = ::send(fd, self->out_.data() + sent, self->out_.size() - sent,
                                 MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
          sent += size_t(n);
        } else if (n < 0 && errno == EINTR) {
          continue;
        } else {
          if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) error = errno;
          break;
        }
      }
      // The rest happens on the I/O thread; this thread keeps no reference (the connection is
      // destroyed on the I/O thread, which owns the set of connections).
      asio::io_context& io = self->server_.io;
      asio::post(io,
                 [self = std::move(self), sent, error] { self->finish_write(sent, error, false); });
    });
  }

  void refuse(int status, const std::string& message) {
    started_ = Clock::now();
    serialize({status, "application/json", json_error(message)}, true);
    finish_write(0, 0, true);
  }

  // The answer as bytes: the status line, the headers a client needs, the body (none for HEAD,
  // whose Content-Length is still the body's).
  void serialize(const HttpResponse& res, bool close) {
    status_ = res.status;
    close_ = close;
    const beast::string_view reason =
        http::obsolete_reason(http::int_to_status(unsigned(res.status)));
    out_ = "HTTP/1.1 " + std::to_string(res.status) + " " + std::string(reason) +
           "\r\nContent-Type: " + res.content_type +
           "\r\nContent-Length: " + std::to_string(res.body.size()) + "\r\n" +
           (res.inference_header_length.empty()
                ? std::string()
                : "Inference-Header-Content-Length: " + res.inference_header_length + "\r\n") +
           (close ? "Connection: close\r\n\r\n" : "\r\n");
    if (!head_) out_ += res.body;
  }

  void finish_write(size_t sent, int error, bool refused) {
    if (error) return written(beast::error_code(error, beast::system_category()), refused);
    if (sent == out_.size()) return written({}, refused);
    // A client that does not read its answer is dropped like one that does not send.
    arm(limits().body_timeout_s);
    asio::async_write(stream_, asio::buffer(out_.data() + sent, out_.size() - sent),
                      [self = shared_from_this(), refused](beast::error_code ec, size_t) {
                        self->written(ec, refused);
                      });
  }

  void written(beast::error_code ec, bool refused) {
    busy_ = false;
    if (server_.observer) {
      HttpExchange x;
      x.remote = remote_;
      x.method = method_;
      x.path = path_;
      x.status = status_;
      x.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
      x.refused = refused;
      server_.observer(x);
    }
    if (ec) return close_now();
    if (close_ || closing_) return linger();
    wait_request();
  }

  // Closing with unread input makes the kernel send a reset, which can destroy the answer before
  // the client reads it: stop sending, then read and drop for up to a second (and 1 MiB).
  void linger() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close_now();
    arm(1.0);
    drop(0);
  }
  void drop(size_t dropped) {
    if (dropped > (1u << 20)) return close_now();
    stream_.async_read_some(asio::buffer(scratch_),
                            [self = shared_from_this(), dropped](beast::error_code ec, size_t n) {
                              if (ec) return self->close_now();
                              self->drop(dropped + n);
                            });
  }

  HttpServer::Impl& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string out_;  // the answer being written
  int status_ = 0;
  bool close_ = false;  // close after this answer
  std::string remote_, method_ = "-", path_ = "-";
  bool head_ = false, keep_alive_ = true;
  bool busy_ = false;  // a request was handed to a handler; its answer is not written yet
  std::atomic<bool> closing_{false};  // the server is stopping (read by handler threads)
  bool timed_out_ = false;            // the timer cancelled the pending operation
  asio::steady_timer timer_;
  Clock::time_point started_;
  char scratch_[4096];
};

}  // namespace

void HttpServer::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;  // stopping
    if (ec) {
      // Out of descriptors or memory: try again shortly rather than spin on the error.
      accept_retry.expires_after(std::chrono::milliseconds(100));
      accept_retry.async_wait([this](beast::error_code e) {
        if (!e) accept();
      });
      return;
    }
    ++accepted;
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto c = std::make_shared<Connection>(*this, std::move(socket));
    if (open > limits.max_connections) {
      ++over_limit;
      c->refuse_overloaded();
    } else {
      c->start();
    }
    accept();
  });
}

HttpServer::HttpServer(const std::string& host, int port, const HttpLimits& limits,
                       HttpHandler handler, HttpObserver observer)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.limits = limits;
  s.handler = std::move(handler);
  s.observer = std::move(observer);
  raise_descriptor_limit();
  const std::string where =
      port == 0 ? host + ": no free port"
                : host + ":" + std::to_string(port) + " (in use, or not an address of this host)";
  beast::error_code ec;
  tcp::resolver resolver(s.io);
  const auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || found.empty()) throw IoError("cannot listen on " + where);
  for (const auto& entry : found) {
    ec = {};
    s.acceptor.open(entry.endpoint().protocol(), ec);
    if (!ec) s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) s.acceptor.bind(entry.endpoint(), ec);
    if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) break;
    beast::error_code ignored;
    s.acceptor.close(ignored);
  }
  if (ec || !s.acceptor.is_open()) throw IoError("cannot listen on " + where);
  s.port = s.acceptor.local_endpoint().port();
}

HttpServer::~HttpServer() {
  stop();
}

int HttpServer::port() const {
  return impl_->port;
}

HttpCounters HttpServer::counters() const {
  return {impl_->open.load(), impl_->accepted.load(), impl_->over_limit.load(),
          impl_->timed_out.load()};
}

void HttpServer::start() {
  Impl& s = *impl_;
  if (s.started) return;
  s.started = true;
  s.pool = std::make_unique<HandlerPool>(std::max(1, s.limits.handlers));
  s.busy.emplace(s.io.get_executor());
  s.accept();
  s.io_thread = std::thread([&s] {
    // A handler that throws must not take the server down: log nothing, keep running.
    for (;;) {
      try {
        s.io.run();
        break;
      } catch (const std::exception&) {
      }
    }
    std::lock_guard<std::mutex> lock(s.done_mutex);
    s.io_done = true;
    s.done_cv.notify_all();
  });
}

void HttpServer::stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  if (!s.started) {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    return;
  }
  asio::post(s.io, [&s] {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    s.accept_retry.cancel();
    for (Connection* c : std::vector<Connection*>(s.connections.begin(), s.connections.end()))
      c->shut();
  });
  s.pool->stop();  // the handlers queued finish (after a drain they answer at once)
  s.busy.reset();
  // The I/O thread runs out of work once the last answers are written and their connections
  // closed; a client that does not read its answer is not waited for past a few seconds.
  {
    std::unique_lock<std::mutex> lock(s.done_mutex);
    s.done_cv.wait_for(lock, std::chrono::seconds(5), [&s] { return s.io_done; });
  }
  s.io.stop();
  s.io_thread.join();
}

}  // namespace nn::tool
