// The inference path of the Service, and the Open Inference Protocol's calls in typed form
// (include/nn/serve.h): what the JSON endpoints answer is built from the same typed answers the
// gRPC front gets, so both say the same thing, down to the error messages.
#include <utility>

#include "serve/http_error.h"
#include "serve/requests.h"
#include "serve/service_impl.h"

namespace nn::api {

using serve::HttpError;

namespace {

// A request admitted to the batcher: counted in flight (drain waits for zero) and announced (a
// batch being collected waits for its job, up to max_delay, and goes at once when no accepted
// request is still on its way) from construction until its jobs are answered. 503 while draining.
class Admission {
 public:
  explicit Admission(Service::Impl& s) : s_(s) {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.draining) throw HttpError(503, "not ready: the server is shutting down");
    gen_ = s.current;
    ++s.in_flight;
    s.batcher->announce();
  }
  ~Admission() {
    if (announced_) s_.batcher->withdraw();
    std::lock_guard<std::mutex> lock(s_.mutex);
    if (--s_.in_flight == 0) s_.idle.notify_all();
  }
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  const std::shared_ptr<const serve::Generation>& gen() const { return gen_; }
  // Queues the job (the first one takes the announcement's place) and waits for its answer;
  // rethrows the engine's error. Adds its rows and times to `trace`.
  void run(serve::Job& job, RequestTrace& trace) {
    s_.batcher->run(job, std::exchange(announced_, false));
    if (job.error) std::rethrow_exception(job.error);
    trace.times.queue += job.times.queue;
    trace.times.input += job.times.input;
    trace.times.infer += job.times.infer;
    trace.times.output += job.times.output;
  }

 private:
  Service::Impl& s_;
  std::shared_ptr<const serve::Generation> gen_;
  bool announced_ = true;
};

// Runs `call` (which throws HttpError for what it refuses) and counts it under `endpoint`.
template <typename Call>
OipStatus answer(Service::Impl& s, serve::Endpoint endpoint, Call&& call,
                 RequestTrace* trace = nullptr) {
  const auto start = std::chrono::steady_clock::now();
  s.metrics.in_flight.fetch_add(1, std::memory_order_relaxed);
  OipStatus st;
  try {
    call();
  } catch (const HttpError& e) {
    st = {e.status(), e.what()};
  } catch (const std::bad_alloc&) {
    st = {500, "out of memory"};
  } catch (const std::exception& e) {
    st = {500, e.what()};
  }
  s.metrics.in_flight.fetch_sub(1, std::memory_order_relaxed);
  s.count(endpoint, st.status, start, trace);
  return st;
}

}  // namespace

ServeResponse Service::Impl::recommend(const std::string& body, RequestTrace& trace) {
  if (body.size() > options.max_body)
    throw HttpError(413, "request body of " + std::to_string(body.size()) + " bytes; at most " +
                             std::to_string(options.max_body));
  trace.model = true;
  Admission admitted(*this);
  serve::RecommendQuery q = serve::parse_recommend(body, admitted.gen(), options);
  if (q.job->rows > 0) admitted.run(*q.job, trace);
  trace.rows = q.job->rows;
  return {200, serve::format_recommend(q)};
}

InferResponse Service::Impl::infer(InferRequest& request, RequestTrace& trace,
                                   const std::string* json_body, size_t json_length,
                                   serve::BinaryOutputs* binary) {
  if (json_body && json_body->size() > options.max_body)
    throw HttpError(413, "request body of " + std::to_string(json_body->size()) +
                             " bytes; at most " + std::to_string(options.max_body));
  trace.model = true;
  Admission admitted(*this);
  if (json_body) request = serve::parse_infer(*json_body, admitted.gen(), json_length, binary);
  serve::InferQuery q = serve::make_infer(request, admitted.gen(), options);
  for (auto& job : q.jobs) admitted.run(*job, trace);
  trace.rows = q.jobs.front()->rows;
  return serve::infer_response(q, name);
}

ModelConfig Service::Impl::config() const {
  const ModelMetadata meta = serve::model_metadata(*snapshot(), name);
  ModelConfig c;
  c.name = name;
  c.platform = meta.platform;
  c.backend = meta.platform;
  c.max_batch_size = int64_t(options.max_rows);
  // Triton's dims leave out the batch dimension, which metadata gives as -1.
  for (auto [from, to] : {std::pair{&meta.inputs, &c.inputs}, std::pair{&meta.outputs, &c.outputs}})
    for (TensorInfo t : *from) {
      t.shape.erase(t.shape.begin());
      to->push_back(std::move(t));
    }
  c.preferred_batch_sizes = {int64_t(options.max_batch)};
  c.max_queue_delay_us = uint64_t(options.max_delay_ms * 1000.0 + 0.5);
  return c;
}

ModelStatistics Service::Impl::statistics() const {
  ModelStatistics st = model_stats.snapshot();
  st.name = name;
  st.version = std::to_string(snapshot()->version);
  return st;
}

OipStatus Service::health(bool readiness) {
  return answer(*impl_, serve::Endpoint::Health, [&] {
    if (readiness) impl_->check_ready();
  });
}

OipStatus Service::server_metadata(ServerMetadata& out) {
  return answer(*impl_, serve::Endpoint::Metadata, [&] { out = serve::server_metadata(); });
}

OipStatus Service::model_ready(const std::string& model, const std::string& version) {
  return answer(*impl_, serve::Endpoint::Metadata, [&] {
    impl_->check_model(model, version);
    impl_->check_ready();
  });
}

OipStatus Service::model_metadata(const std::string& model, const std::string& version,
                                  ModelMetadata& out) {
  return answer(*impl_, serve::Endpoint::Metadata, [&] {
    impl_->check_model(model, version);
    out = serve::model_metadata(*impl_->snapshot(), impl_->name);
  });
}

OipStatus Service::model_config(const std::string& model, const std::string& version,
                                ModelConfig& out) {
  return answer(*impl_, serve::Endpoint::Metadata, [&] {
    impl_->check_model(model, version);
    out = impl_->config();
  });
}

OipStatus Service::model_statistics(const std::string& model, const std::string& version,
                                    ModelStatistics& out) {
  return answer(*impl_, serve::Endpoint::Metadata, [&] {
    impl_->check_model(model, version);
    out = impl_->statistics();
  });
}

OipStatus Service::infer(InferRequest request, InferResponse& out) {
  RequestTrace trace;
  return answer(
      *impl_, serve::Endpoint::Infer,
      [&] {
        impl_->check_model(request.model_name, request.model_version);
        out = impl_->infer(request, trace);
      },
      &trace);
}

}  // namespace nn::api
