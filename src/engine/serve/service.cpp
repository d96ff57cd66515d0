// The public Service (include/nn/serve.h): lifecycle, HTTP routing, reload and drain around the
// batcher (the inference path and the typed Open Inference Protocol calls are service_oip.cpp's).
// A request takes the current generation of the model when it is accepted and keeps it to the
// end, so reload() can swap generations at any time: batches already formed finish on the old
// model, which is freed when its last request has been answered.
#include <atomic>
#include <charconv>
#include <chrono>
#include <utility>

#include "nn/error.h"
#include "nn/process.h"
#include "nn/serve.h"
#include "serve/http_error.h"
#include "serve/oip_json.h"
#include "serve/requests.h"
#include "serve/service_impl.h"

namespace nn::api {

using serve::Generation;
using serve::HttpError;

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
  // The item names come from the network when it carries them, else from the index files
  // (serve/generation.cpp says which is missing).
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
                                               s.options.max_delay_ms, &s.metrics, &s.model_stats);
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
  RequestTrace trace;
  try {
    response = s.route(request, trace);
  } catch (const HttpError& e) {
    response = {e.status(), serve::error_body(e.what())};
  } catch (const std::bad_alloc&) {
    response = {500, serve::error_body("out of memory")};
  } catch (const std::exception& e) {
    response = {500, serve::error_body(e.what())};
  }
  s.metrics.in_flight.fetch_sub(1, std::memory_order_relaxed);
  s.count(serve::endpoint_of(request.path), response.status, start, &trace);
  return response;
}

void Service::Impl::count(serve::Endpoint endpoint, int status,
                          std::chrono::steady_clock::time_point start, const RequestTrace* trace) {
  const auto elapsed = std::chrono::steady_clock::now() - start;
  metrics.request(endpoint, status, std::chrono::duration<double>(elapsed).count());
  if (trace && trace->model)
    model_stats.request(status == 200, trace->rows,
                        uint64_t(std::chrono::nanoseconds(elapsed).count()), trace->times);
  std::lock_guard<std::mutex> lock(mutex);
  ++requests;
}

void Service::Impl::check_model(const std::string& model, const std::string& version) const {
  if (model != name)
    throw HttpError(404, "no model '" + model + "'; this server has '" + name + "'");
  if (!version.empty()) {
    const std::string serving = std::to_string(snapshot()->version);
    if (version != serving)
      throw HttpError(404, "no version '" + version + "' of model '" + name +
                               "'; this server has version " + serving);
  }
}

void Service::Impl::check_ready() const {
  std::lock_guard<std::mutex> lock(mutex);
  if (draining) throw HttpError(503, "not ready: the server is shutting down");
}

ServeResponse Service::Impl::infer_http(const ServeRequest& r, RequestTrace& trace) {
  size_t json_length = std::string::npos;
  if (!r.inference_header_length.empty()) {
    const std::string& h = r.inference_header_length;
    const auto end = h.data() + h.size();
    unsigned long long n = 0;
    const auto [ptr, ec] = std::from_chars(h.data(), end, n);
    if (ec != std::errc() || ptr != end)
      throw HttpError(400,
                      "Inference-Header-Content-Length: expected a byte count; got '" + h + "'");
    json_length = size_t(n);
  }
  InferRequest request;
  serve::BinaryOutputs binary;
  const InferResponse answer = infer(request, trace, &r.body, json_length, &binary);
  ServeResponse out;
  size_t json_part = std::string::npos;
  out.body = serve::format_infer(answer, binary, &json_part);
  if (json_part != std::string::npos) {
    out.content_type = "application/octet-stream";
    out.inference_header_length = std::to_string(json_part);
  }
  return out;
}

ServeResponse Service::Impl::route(const ServeRequest& r, RequestTrace& trace) {
  const std::vector<std::string> seg = segments(r.path);
  const auto ok = [](std::string body) { return ServeResponse{200, std::move(body)}; };
  if (seg.size() == 1 && seg[0] == "recommend") {
    require_method(r, "POST");
    return recommend(r.body, trace);
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
    return ok(serve::format_server_metadata(serve::server_metadata()));
  }
  if (seg.size() == 3 && seg[1] == "health" && (seg[2] == "live" || seg[2] == "ready")) {
    require_method(r, "GET");
    if (seg[2] == "live") return ok("{\"live\":true}");
    check_ready();
    return ok("{\"ready\":true}");
  }
  if (seg.size() == 3 && seg[1] == "models" && seg[2] == "stats" && name != "stats") {
    // Triton's statistics of every model: this one.
    require_method(r, "GET");
    return ok(serve::format_statistics({statistics()}));
  }
  if (seg.size() >= 3 && seg[1] == "models") {
    // /v2/models/<name>[/versions/<version>][/<action>]
    const std::string& model = seg[2];
    std::string version;
    size_t next = 3;
    if (seg.size() >= 5 && seg[3] == "versions") {
      version = seg[4];
      next = 5;
    }
    const std::string action = seg.size() == next + 1 ? seg[next] : "";
    if (seg.size() > next + 1 || (seg.size() == 4 && seg[3] == "versions"))
      throw HttpError(404, "no endpoint " + r.path);
    check_model(model, version);
    if (action.empty()) {
      require_method(r, "GET");
      return ok(serve::format_metadata(serve::model_metadata(*snapshot(), name)));
    }
    if (action == "ready") {
      require_method(r, "GET");
      check_ready();
      return ok("{\"name\":\"" + name + "\",\"ready\":true}");
    }
    if (action == "infer") {
      require_method(r, "POST");
      return infer_http(r, trace);
    }
    if (action == "config") {
      require_method(r, "GET");
      return ok(serve::format_config(config()));
    }
    if (action == "stats") {
      require_method(r, "GET");
      return ok(serve::format_statistics({statistics()}));
    }
  }
  throw HttpError(404, "no endpoint " + r.path);
}

}  // namespace nn::api
