// The Open Inference Protocol's gRPC service (grpc_oip.h): messages to and from the Service's
// typed calls. Tensors travel as raw little-endian bytes (raw_input_contents, the clients' usual
// way; answers in raw_output_contents, as Triton answers) or as typed lists (contents).
#include "nn-serve/grpc_oip.h"

#include <cstdio>
#include <cstring>
#include <utility>

namespace nn::tool {
namespace {

const char* const kMethodNames[] = {"ServerLive",     "ServerReady",    "ModelReady",
                                    "ServerMetadata", "ModelMetadata",  "ModelInfer",
                                    "ModelConfig",    "ModelStatistics"};
const char* const kCodeNames[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

grpc::Status invalid(const std::string& message) {
  return {grpc::StatusCode::INVALID_ARGUMENT, message};
}

// One input tensor of the request as the Service's Tensor; `raw` is its raw_input_contents
// entry, or null when the request has none. A datatype other than FP32 leaves the data empty:
// the Service refuses the datatype, with the message the JSON endpoint gives.
grpc::Status read_input(const inference::ModelInferRequest::InferInputTensor& in,
                        const std::string* raw, size_t i, api::Tensor& t) {
  const std::string where = "inputs[" + std::to_string(i) + "]";
  t.name = in.name();
  t.datatype = in.datatype();
  t.shape.assign(in.shape().begin(), in.shape().end());
  if (t.datatype != "FP32") return grpc::Status::OK;
  const auto& c = in.contents();
  const bool typed = c.bool_contents_size() + c.int_contents_size() + c.int64_contents_size() +
                         c.uint_contents_size() + c.uint64_contents_size() +
                         c.fp32_contents_size() + c.fp64_contents_size() + c.bytes_contents_size() >
                     0;
  if (raw) {
    if (typed)
      return invalid(where + ".contents: given beside raw_input_contents; give one or the other");
    if (raw->size() % sizeof(float) != 0)
      return invalid("raw_input_contents[" + std::to_string(i) + "]: " +
                     std::to_string(raw->size()) + " bytes, not a whole number of FP32 values");
    // Little-endian on the wire, as on every machine nn-serve is built for.
    t.data.resize(raw->size() / sizeof(float));
    if (!t.data.empty()) std::memcpy(t.data.data(), raw->data(), raw->size());
    return grpc::Status::OK;
  }
  if (typed && c.fp32_contents_size() == 0)
    return invalid(where + ".contents: FP32 values go in fp32_contents");
  t.data.assign(c.fp32_contents().begin(), c.fp32_contents().end());
  return grpc::Status::OK;
}

void fill_tensors(
    const std::vector<api::TensorInfo>& from,
    google::protobuf::RepeatedPtrField<inference::ModelMetadataResponse::TensorMetadata>* to) {
  for (const api::TensorInfo& t : from) {
    auto* m = to->Add();
    m->set_name(t.name);
    m->set_datatype(t.datatype);
    for (int64_t d : t.shape) m->add_shape(d);
  }
}

inference::DataType config_type(const std::string& datatype) {
  inference::DataType type = inference::TYPE_INVALID;
  inference::DataType_Parse("TYPE_" + datatype, &type);
  return type;
}

void fill_duration(const api::StatDuration& from, inference::StatisticDuration* to) {
  to->set_count(from.count);
  to->set_ns(from.ns);
}

}  // namespace

grpc::StatusCode grpc_code(int http_status) {
  switch (http_status) {
    case 200:
      return grpc::StatusCode::OK;
    case 400:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case 404:
      return grpc::StatusCode::NOT_FOUND;
    case 405:
      return grpc::StatusCode::UNIMPLEMENTED;
    case 408:
      return grpc::StatusCode::DEADLINE_EXCEEDED;
    case 413:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case 500:
      return grpc::StatusCode::INTERNAL;
    case 503:
      return grpc::StatusCode::UNAVAILABLE;
    default:
      return grpc::StatusCode::UNKNOWN;
  }
}

namespace {

// A status of the Service (HTTP's) as gRPC's.
grpc::Status to_grpc(const api::OipStatus& st) {
  return st.ok() ? grpc::Status::OK : grpc::Status(grpc_code(st.status), st.error);
}

}  // namespace

OipService::OipService(api::Service& service, HandlerPool& pool, uint64_t max_pending,
                       bool access_log)
    : service_(service), pool_(pool), max_pending_(max_pending), access_log_(access_log) {}

grpc::Status OipService::done(grpc::CallbackServerContext* context, Method method,
                              const grpc::Status& status, Clock::time_point start) {
  const int code = int(status.error_code());
  const int slot = code >= 0 && code < kCodes ? code : int(grpc::StatusCode::UNKNOWN);
  calls_[method][slot].fetch_add(1, std::memory_order_relaxed);
  if (access_log_) {
    // "ipv4:127.0.0.1:50312" -> "127.0.0.1", "ipv6:[::1]:50312" -> "[::1]", as HTTP's log names
    // the client.
    std::string peer = context->peer();
    const size_t scheme = peer.find(':'), port = peer.rfind(':');
    if (scheme != std::string::npos && port != std::string::npos && port > scheme)
      peer = peer.substr(scheme + 1, port - scheme - 1);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    // One fprintf per line: lines of concurrent calls do not interleave.
    std::fprintf(stderr, "%s gRPC %s %s %.3f ms\n", peer.c_str(), kMethodNames[method],
                 kCodeNames[slot], ms);
  }
  return status;
}

grpc::ServerUnaryReactor* OipService::finish(grpc::CallbackServerContext* context, Method method,
                                             Clock::time_point start, const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(done(context, method, status, start));
  return reactor;
}

grpc::ServerUnaryReactor* OipService::ServerLive(grpc::CallbackServerContext* context,
                                                 const inference::ServerLiveRequest*,
                                                 inference::ServerLiveResponse* out) {
  const Clock::time_point start = Clock::now();
  out->set_live(service_.health(false).ok());
  return finish(context, kServerLive, start, grpc::Status::OK);
}

grpc::ServerUnaryReactor* OipService::ServerReady(grpc::CallbackServerContext* context,
                                                  const inference::ServerReadyRequest*,
                                                  inference::ServerReadyResponse* out) {
  const Clock::time_point start = Clock::now();
  // Not ready is an answer, not a failure (HTTP says it with 503; gRPC with ready: false).
  out->set_ready(service_.health(true).ok());
  return finish(context, kServerReady, start, grpc::Status::OK);
}

grpc::ServerUnaryReactor* OipService::ModelReady(grpc::CallbackServerContext* context,
                                                 const inference::ModelReadyRequest* in,
                                                 inference::ModelReadyResponse* out) {
  const Clock::time_point start = Clock::now();
  const api::OipStatus st = service_.model_ready(in->name(), in->version());
  out->set_ready(st.ok());
  // An unknown model is an error; a known one that is not ready (draining) is ready: false.
  return finish(context, kModelReady, start, st.status == 503 ? grpc::Status::OK : to_grpc(st));
}

grpc::ServerUnaryReactor* OipService::ServerMetadata(grpc::CallbackServerContext* context,
                                                     const inference::ServerMetadataRequest*,
                                                     inference::ServerMetadataResponse* out) {
  const Clock::time_point start = Clock::now();
  api::ServerMetadata meta;
  const api::OipStatus st = service_.server_metadata(meta);
  out->set_name(meta.name);
  out->set_version(meta.version);
  for (const std::string& e : meta.extensions) out->add_extensions(e);
  return finish(context, kServerMetadata, start, to_grpc(st));
}

grpc::ServerUnaryReactor* OipService::ModelMetadata(grpc::CallbackServerContext* context,
                                                    const inference::ModelMetadataRequest* in,
                                                    inference::ModelMetadataResponse* out) {
  const Clock::time_point start = Clock::now();
  api::ModelMetadata meta;
  const api::OipStatus st = service_.model_metadata(in->name(), in->version(), meta);
  if (st.ok()) {
    out->set_name(meta.name);
    for (const std::string& v : meta.versions) out->add_versions(v);
    out->set_platform(meta.platform);
    fill_tensors(meta.inputs, out->mutable_inputs());
    fill_tensors(meta.outputs, out->mutable_outputs());
  }
  return finish(context, kModelMetadata, start, to_grpc(st));
}

grpc::ServerUnaryReactor* OipService::ModelInfer(grpc::CallbackServerContext* context,
                                                 const inference::ModelInferRequest* in,
                                                 inference::ModelInferResponse* out) {
  const Clock::time_point start = Clock::now();
  if (pending_.fetch_add(1) >= max_pending_) {
    pending_.fetch_sub(1);
    return finish(context, kModelInfer, start,
                  {grpc::StatusCode::RESOURCE_EXHAUSTED,
                   std::to_string(max_pending_) +
                       " calls in progress; at most that many at once (--max-connections)"});
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // The request and the answer live until Finish, so the handler thread may read and fill them.
  const bool queued = pool_.submit([this, context, in, out, reactor, start] {
    const grpc::Status st = done(context, kModelInfer, model_infer(*in, *out), start);
    pending_.fetch_sub(1);
    reactor->Finish(st);
  });
  if (!queued) {  // the front is stopping: a call must still be finished
    pending_.fetch_sub(1);
    reactor->Finish(done(context, kModelInfer,
                         {grpc::StatusCode::UNAVAILABLE, "the server is shutting down"}, start));
  }
  return reactor;
}

grpc::Status OipService::model_infer(const inference::ModelInferRequest& in,
                                     inference::ModelInferResponse& out) {
  api::InferRequest request;
  request.model_name = in.model_name();
  request.model_version = in.model_version();
  request.id = in.id();
  const int raw = in.raw_input_contents_size();
  if (raw > 0 && raw != in.inputs_size())
    return invalid("raw_input_contents: " + std::to_string(raw) + " entries for " +
                   std::to_string(in.inputs_size()) + " inputs; give one per input, or none");
  for (int i = 0; i < in.inputs_size(); ++i) {
    request.inputs.emplace_back();
    const grpc::Status st = read_input(in.inputs(i), raw > 0 ? &in.raw_input_contents(i) : nullptr,
                                       size_t(i), request.inputs.back());
    if (!st.ok()) return st;
  }
  for (const auto& o : in.outputs()) request.outputs.push_back(o.name());
  api::InferResponse answer;
  const api::OipStatus st = service_.infer(std::move(request), answer);
  if (!st.ok()) return to_grpc(st);
  out.set_model_name(answer.model_name);
  out.set_model_version(answer.model_version);
  out.set_id(answer.id);
  for (const api::Tensor& t : answer.outputs) {
    auto* o = out.add_outputs();
    o->set_name(t.name);
    o->set_datatype(t.datatype);
    for (int64_t d : t.shape) o->add_shape(d);
    out.add_raw_output_contents(reinterpret_cast<const char*>(t.data.data()),
                                t.data.size() * sizeof(float));
  }
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* OipService::ModelConfig(grpc::CallbackServerContext* context,
                                                  const inference::ModelConfigRequest* in,
                                                  inference::ModelConfigResponse* out) {
  const Clock::time_point start = Clock::now();
  return finish(context, kModelConfig, start, model_config(*in, *out));
}

grpc::Status OipService::model_config(const inference::ModelConfigRequest& in,
                                      inference::ModelConfigResponse& out) {
  api::ModelConfig c;
  const api::OipStatus st = service_.model_config(in.name(), in.version(), c);
  if (!st.ok()) return to_grpc(st);
  inference::ModelConfig* config = out.mutable_config();
  config->set_name(c.name);
  config->set_platform(c.platform);
  config->set_backend(c.backend);
  config->set_max_batch_size(int32_t(c.max_batch_size));
  for (const api::TensorInfo& t : c.inputs) {
    auto* m = config->add_input();
    m->set_name(t.name);
    m->set_data_type(config_type(t.datatype));
    for (int64_t d : t.shape) m->add_dims(d);
  }
  for (const api::TensorInfo& t : c.outputs) {
    auto* m = config->add_output();
    m->set_name(t.name);
    m->set_data_type(config_type(t.datatype));
    for (int64_t d : t.shape) m->add_dims(d);
  }
  auto* batching = config->mutable_dynamic_batching();
  for (int64_t b : c.preferred_batch_sizes) batching->add_preferred_batch_size(int32_t(b));
  batching->set_max_queue_delay_microseconds(c.max_queue_delay_us);
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* OipService::ModelStatistics(grpc::CallbackServerContext* context,
                                                      const inference::ModelStatisticsRequest* in,
                                                      inference::ModelStatisticsResponse* out) {
  const Clock::time_point start = Clock::now();
  return finish(context, kModelStatistics, start, model_statistics(*in, *out));
}

grpc::Status OipService::model_statistics(const inference::ModelStatisticsRequest& in,
                                          inference::ModelStatisticsResponse& out) {
  api::ModelStatistics s;
  // No name asks for every model's statistics: this server's one.
  const std::string& model = in.name().empty() ? service_.model_name() : in.name();
  const api::OipStatus st = service_.model_statistics(model, in.version(), s);
  if (!st.ok()) return to_grpc(st);
  inference::ModelStatistics* m = out.add_model_stats();
  m->set_name(s.name);
  m->set_version(s.version);
  m->set_last_inference(s.last_inference_ms);
  m->set_inference_count(s.inference_count);
  m->set_execution_count(s.execution_count);
  inference::InferStatistics* is = m->mutable_inference_stats();
  fill_duration(s.success, is->mutable_success());
  fill_duration(s.fail, is->mutable_fail());
  fill_duration(s.queue, is->mutable_queue());
  fill_duration(s.compute_input, is->mutable_compute_input());
  fill_duration(s.compute_infer, is->mutable_compute_infer());
  fill_duration(s.compute_output, is->mutable_compute_output());
  fill_duration({}, is->mutable_cache_hit());
  fill_duration({}, is->mutable_cache_miss());
  for (const api::BatchStats& b : s.batches) {
    auto* bs = m->add_batch_stats();
    bs->set_batch_size(b.batch_size);
    fill_duration(b.compute_input, bs->mutable_compute_input());
    fill_duration(b.compute_infer, bs->mutable_compute_infer());
    fill_duration(b.compute_output, bs->mutable_compute_output());
  }
  return grpc::Status::OK;
}

std::string OipService::metrics() const {
  std::string out =
      "# HELP nn_serve_grpc_requests_total gRPC calls of inference.GRPCInferenceService "
      "answered, by method and status code (each is also in nn_serve_requests_total under its "
      "endpoint).\n# TYPE nn_serve_grpc_requests_total counter\n";
  for (int m = 0; m < kMethods; ++m)
    for (int c = 0; c < kCodes; ++c) {
      const uint64_t n = calls_[m][c].load(std::memory_order_relaxed);
      if (n == 0) continue;  // a series appears once it has happened
      out += std::string("nn_serve_grpc_requests_total{method=\"") + kMethodNames[m] +
             "\",code=\"" + kCodeNames[c] + "\"} " + std::to_string(n) + "\n";
    }
  return out;
}

}  // namespace nn::tool
