// The public Service (include/nn/serve.h): routing, status codes, reload and drain around the
// batcher. A request takes the current generation of the model when it is accepted and keeps it
// to the end, so reload() can swap generations at any time: batches already formed finish on the
// old model, which is freed when its last request has been answered.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "nn/error.h"
#include "nn/process.h"
#include "nn/serve.h"
#include "serve/batcher.h"
#include "serve/generation.h"
#include "serve/http_error.h"
#include "serve/metrics.h"
#include "serve/requests.h"

namespace nn::api {

using serve::Generation;
using serve::HttpError;

struct Service::Impl {
  ServeOptions options;
  LogSink log;
  int workers = 1;
  std::string name;
  mutable std::mutex mutex;  // guards current, draining, in_flight, requests and reloads
  std::condition_variable idle;
  std::shared_ptr<const Generation> current;
  bool draining = false;
  uint64_t in_flight = 0, requests = 0, reloads = 0;
  std::mutex reload_mutex;  // one reload at a time
  serve::Metrics metrics;   // before the batcher, which records into it
  std::unique_ptr<serve::Batcher> batcher;

  std::shared_ptr<const Generation> snapshot() const {
    std::lock_guard<std::mutex> lock(mutex);
    return current;
  }
  ServeResponse route(const ServeRequest& r);
  ServeResponse infer(const std::string& body, bool recommend);
};

namespace {

// "/v2/models/x/infer" -> {"v2", "models", "x", "infer"} (empty segments dropped).
std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= path.size()) {
    const size_t slash = path.find('/', at);
    const size_t end = slash == std::string::npos ? path.size() : slash;
    if (end > at) out.push_back(path.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

void require_method(const ServeRequest& r, const char* method) {
  if (r.method != method)
    throw HttpError(405, r.method + " " + r.path + ": this endpoint takes " + method);
}

}  // namespace

Service::Service(ServeOptions options, LogSink log) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  if (options.network.empty()) throw ArgumentError("no network file");
  if (options.input_index.empty() || options.output_index.empty())
    throw ArgumentError("serving needs the input and output index files (item names)");
  if (options.max_batch == 0) throw ArgumentError("max_batch: must be positive");
  if (options.max_k == 0 || options.default_k == 0 || options.default_k > options.max_k)
    throw ArgumentError("k: the default k must be between 1 and max_k");
  if (options.threads <= 0) options.threads = default_thread_count();
  s.workers = options.threads;
  s.options = std::move(options);
  s.log = std::move(log);
  s.current = serve::load_generation(s.options, s.workers, 1);
  s.name = s.options.model_name.empty() ? s.current->model->name() : s.options.model_name;
  if (s.name.empty()) s.name = "model";
  s.batcher = std::make_unique<serve::Batcher>(s.workers, s.options.max_batch,
                                               s.options.max_delay_ms, &s.metrics);
}

Service::~Service() {
  drain();
  impl_->batcher.reset();
}

const std::string& Service::model_name() const {
  return impl_->name;
}
const ServeOptions& Service::options() const {
  return impl_->options;
}

bool Service::ready() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return !impl_->draining && impl_->current;
}

ServeStats Service::stats() const {
  ServeStats st;
  const serve::BatcherStats b = impl_->batcher->stats();
  st.batches = b.batches;
  st.rows = b.rows;
  st.max_rows_in_batch = b.max_rows;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  st.requests = impl_->requests;
  st.reloads = impl_->reloads;
  st.version = impl_->current->version;
  st.in_flight = impl_->in_flight;
  return st;
}

bool Service::network_changed() const {
  return serve::identify(impl_->options.network) != impl_->snapshot()->file;
}

uint64_t Service::reload() {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> one_at_a_time(s.reload_mutex);
  const uint64_t version = s.snapshot()->version + 1;
  // Loaded beside the current generation, which keeps serving meanwhile; a failure leaves it.
  std::shared_ptr<const Generation> next;
  try {
    next = serve::load_generation(s.options, s.workers, version);
  } catch (...) {
    s.metrics.reload(false);
    throw;
  }
  s.metrics.reload(true);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.current = next;
    ++s.reloads;
  }
  s.log("serving " + s.options.network + " as version " + std::to_string(version));
  return version;
}

void Service::drain() {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  impl_->draining = true;
  impl_->idle.wait(lock, [&] { return impl_->in_flight == 0; });
}

std::string Service::metrics() const {
  const std::shared_ptr<const Generation> gen = impl_->snapshot();
  return impl_->metrics.text(impl_->name, gen->version);
}

void Service::count_refused(int status, double seconds) {
  impl_->metrics.request(serve::Endpoint::Refused, status, seconds);
}

ServeResponse Service::handle(const ServeRequest& request) {
  Impl& s = *impl_;
  const auto start = std::chrono::steady_clock::now();
  s.metrics.in_flight.fetch_add(1, std::memory_order_relaxed);
  ServeResponse response;
  try {
    response = s.route(request);
  } catch (const HttpError& e) {
    response = {e.status(), serve::error_body(e.what())};
  } catch (const std::bad_alloc&) {
    response = {500, serve::error_body("out of memory")};
  } catch (const std::exception& e) {
    response = {500, serve::error_body(e.what())};
  }
  s.metrics.in_flight.fetch_sub(1, std::memory_order_relaxed);
  s.metrics.request(
      serve::endpoint_of(request.path), response.status,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.requests;
  return response;
}

ServeResponse Service::Impl::route(const ServeRequest& r) {
  const std::vector<std::string> seg = segments(r.path);
  const auto ok = [](std::string body) { return ServeResponse{200, std::move(body)}; };
  if (seg.size() == 1 && seg[0] == "recommend") {
    require_method(r, "POST");
    return infer(r.body, true);
  }
  if (seg.size() == 1 && seg[0] == "metrics") {
    require_method(r, "GET");
    const uint64_t version = snapshot()->version;
    return {200, metrics.text(name, version), "text/plain; version=0.0.4; charset=utf-8"};
  }
  if (seg.empty() || seg[0] != "v2")
    throw HttpError(404, "no endpoint " + r.path +
                             "; endpoints are POST /recommend, GET /v2/health/live, GET "
                             "/v2/health/ready, GET /v2/models/" +
                             name + ", POST /v2/models/" + name + "/infer, GET /metrics");
  if (seg.size() == 1) {
    require_method(r, "GET");
    return ok("{\"name\":\"nn-serve\",\"extensions\":[]}");
  }
  if (seg.size() == 3 && seg[1] == "health" && (seg[2] == "live" || seg[2] == "ready")) {
    require_method(r, "GET");
    if (seg[2] == "live") return ok("{\"live\":true}");
    std::lock_guard<std::mutex> lock(mutex);
    if (draining) throw HttpError(503, "not ready: the server is shutting down");
    return ok("{\"ready\":true}");
  }
  if (seg.size() >= 3 && seg[1] == "models") {
    if (seg[2] != name)
      throw HttpError(404, "no model '" + seg[2] + "'; this server has '" + name + "'");
    if (seg.size() == 3) {
      require_method(r, "GET");
      return ok(serve::format_metadata(*snapshot(), name));
    }
    if (seg.size() == 4 && seg[3] == "ready") {
      require_method(r, "GET");
      std::lock_guard<std::mutex> lock(mutex);
      if (draining) throw HttpError(503, "not ready: the server is shutting down");
      return ok("{\"name\":\"" + name + "\",\"ready\":true}");
    }
    if (seg.size() == 4 && seg[3] == "infer") {
      require_method(r, "POST");
      return infer(r.body, false);
    }
  }
  throw HttpError(404, "no endpoint " + r.path);
}

ServeResponse Service::Impl::infer(const std::string& body, bool recommend) {
  if (body.size() > options.max_body)
    throw HttpError(413, "request body of " + std::to_string(body.size()) + " bytes; at most " +
                             std::to_string(options.max_body));
  std::shared_ptr<const Generation> gen;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (draining) throw HttpError(503, "not ready: the server is shutting down");
    gen = current;
    ++in_flight;
  }
  // Counted in flight from here to the answer, whatever happens (drain waits for zero).
  struct InFlight {
    Impl& s;
    ~InFlight() {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (--s.in_flight == 0) s.idle.notify_all();
    }
  } in_flight_guard{*this};
  // Announced to the batcher until its first job is queued: a batch being collected waits for
  // it (up to max_delay), and goes at once when no accepted request is still on its way.
  batcher->announce();
  bool announced = true;
  struct Withdraw {
    serve::Batcher& b;
    bool& pending;
    ~Withdraw() {
      if (pending) b.withdraw();
    }
  } withdraw_guard{*batcher, announced};
  auto rethrow = [](const serve::Job& j) {
    if (j.error) std::rethrow_exception(j.error);
  };
  if (recommend) {
    serve::RecommendQuery q = serve::parse_recommend(body, gen, options);
    if (q.job->rows > 0) {
      batcher->run(*q.job, std::exchange(announced, false));
      rethrow(*q.job);
    }
    return {200, serve::format_recommend(q)};
  }
  serve::InferQuery q = serve::parse_infer(body, gen, options);
  for (auto& job : q.jobs) {
    batcher->run(*job, std::exchange(announced, false));
    rethrow(*job);
  }
  return {200, serve::format_infer(q, name)};
}

}  // namespace nn::api
