// Public API: a Service answers recommendation and inference requests over one network file, the
// engine of nn-serve (docs/serving.md). It speaks HTTP semantics without sockets: handle() takes a
// method, a path and a JSON body and returns a status and a JSON body, so a program (or a test)
// can run it in-process and put any HTTP server in front of it.
//
// Endpoints:
//   POST /recommend                  {"items": ["1", "50"], "k": 10, "exclude": true} -> top K
//                                    {"items": [...], "scores": [...]}, names from the indices;
//                                    a JSON list of such objects answers several users at once
//   GET  /v2/health/live, /v2/health/ready, /v2, /v2/models/<name>, /v2/models/<name>/ready
//   POST /v2/models/<name>/infer     Open Inference Protocol v2: FP32 input rows -> the output
//                                    layer's scores
//   GET  /v2/models/<name>/config, /v2/models/<name>/stats   Triton's model configuration and
//                                    statistics (for perf_analyzer)
//   (every /v2/models/<name>/... also as /v2/models/<name>/versions/<version>/...)
//   GET  /metrics                    Prometheus text format (version 0.0.4): requests by
//                                    endpoint and status, latency, queue time and batch size
//                                    histograms, requests in flight, model version, reloads and
//                                    their failures, process memory
// Concurrent requests are gathered into minibatches (up to max_batch rows, or max_delay_ms after
// the first) run by a pool of Evaluators sharing one Model; the Model is made batch-invariant
// (ModelOptions::batch_invariant), so every request gets exactly the answer it would get alone.
// reload() swaps in a new network file while requests already accepted finish on the old one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/command_file.h"
#include "nn/log.h"

namespace nn::api {

struct ServeOptions {
  std::string network;       // trained network .nc (read again by reload())
  std::string input_index;   // label<TAB>index of the input layer's units: request item names
  std::string output_index;  // label<TAB>index of the output layer's units: answer item names
  // The indices may be left out when the network carries its items (docs/retraining.md): a
  // replaced network then brings its own items, swapped in with it. An index given beside such a
  // network must list the same items, else the load (or the reload) is refused, unless
  // `remap_index`: then it is matched by name and the network's items are used.
  bool remap_index = false;
  std::string model_name;  // the model's name in /v2/models/<name> ("" = the network's Name)
  std::string backend = "cpu";
  int threads = 0;              // evaluators working at once, and the CPU backend's threads
                                // (0 = every CPU this process may use)
  int device = -1;              // CUDA device
  uint32_t max_batch = 256;     // rows per forward pass (1 = no batching)
  double max_delay_ms = 2.0;    // a batch waits at most this long after its first request
  uint32_t default_k = 10;      // k of a request that gives none
  uint32_t max_k = 1000;        // larger k is a bad request
  uint64_t max_body = 1 << 20;  // bytes of a request body; larger: 413
  uint64_t max_rows = 4096;     // users (rows) in one request; more: 413
  // Where an HTTP front end listens (nn-serve); the Service itself does not use them.
  std::string host = "127.0.0.1";
  int port = 8080;     // 0: any free port
  int grpc_port = -1;  // the gRPC front (Open Inference Protocol): -1 none, 0 any free port
  // PEM files of a certificate chain and its private key: the gRPC front over TLS ("": plain).
  std::string grpc_tls_cert, grpc_tls_key;
};

// The service a CDL command file (Command "Serve") describes: its Network, Backend, Device and
// ServeParameters (InputIndex, OutputIndex, Host, Port, GrpcPort, GrpcTlsCert, GrpcTlsKey, Threads,
// MaxBatch, MaxDelayMs, K, MaxK, MaxBody, ModelName); the defaults above where it says nothing.
// ConfigError for another Command.
ServeOptions serve_options(const CommandFile& cdl);

struct ServeRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string
  std::string body;
  // The Inference-Header-Content-Length header of Triton's binary tensor extension ("" when
  // absent): the body is that many bytes of JSON, then the inputs' raw data.
  std::string inference_header_length{};
};

struct ServeResponse {
  int status = 200;
  std::string body;  // JSON; errors are {"error": "message"}; /metrics: Prometheus text
  std::string content_type = "application/json";
  // Set when outputs were asked for as binary: the length of the body's JSON part (the
  // Inference-Header-Content-Length header to send); the raw outputs follow it.
  std::string inference_header_length{};
};

// What the service has done so far.
struct ServeStats {
  uint64_t requests = 0;  // requests answered (any status)
  uint64_t rows = 0;      // rows (users, inference rows) scored
  uint64_t batches = 0;   // forward passes run
  uint64_t max_rows_in_batch = 0;
  uint64_t reloads = 0;    // successful reloads
  uint64_t version = 0;    // the current model's version (1 = the network loaded at start)
  uint64_t in_flight = 0;  // requests accepted and not answered yet
};

// The Open Inference Protocol without JSON, for a front end that carries it in another encoding
// (nn-serve's gRPC): the same checks, batcher, answers and errors as the JSON endpoints. Each call
// returns the HTTP status the JSON endpoint would answer, with its message, and is counted in the
// metrics under the same endpoint.
struct OipStatus {
  int status = 200;   // 200, or 400, 404, 413, 500, 503 as the JSON endpoints answer
  std::string error;  // why, when not 200
  bool ok() const { return status == 200; }
};

// The server: "nn-serve", its version, and the protocol extensions it serves (Triton's
// "model_configuration" and "statistics": /config and /stats, which perf_analyzer looks for).
struct ServerMetadata {
  std::string name, version;
  std::vector<std::string> extensions;
};

struct TensorInfo {
  std::string name;
  std::string datatype = "FP32";
  std::vector<int64_t> shape;  // -1: any size (the batch dimension)
};

struct ModelMetadata {
  std::string name, platform;
  std::vector<std::string> versions;
  std::vector<TensorInfo> inputs, outputs;
};

// A tensor of FP32 elements, row-major: an input ([columns] or [rows, columns]) or an output.
struct Tensor {
  std::string name;
  std::string datatype = "FP32";  // an input of another type is refused (400)
  std::vector<int64_t> shape;
  std::vector<float> data;
};

struct InferRequest {
  std::string model_name;
  std::string model_version;  // "" or the version being served
  std::string id;             // echoed in the answer
  std::vector<Tensor> inputs;
  std::vector<std::string> outputs;  // layers to answer (none: the network's output layers)
};

struct InferResponse {
  std::string model_name, model_version, id;
  std::vector<Tensor> outputs;  // [rows, units] each
};

// Triton's model configuration, as far as it describes this server: inputs and outputs with
// their dims after the batch dimension, the largest batch a request may carry, the batcher's
// settings.
struct ModelConfig {
  std::string name, platform, backend;
  int64_t max_batch_size = 0;  // rows in one request (max_rows)
  std::vector<TensorInfo> inputs, outputs;
  std::vector<int64_t> preferred_batch_sizes;  // max_batch
  uint64_t max_queue_delay_us = 0;             // max_delay_ms
};

// Triton's model statistics: counts and total nanoseconds. success/fail count inference requests
// (POST .../infer, /recommend and their gRPC form) from arrival to answer; queue, compute_input,
// compute_infer and compute_output divide a successful request's time in the batcher (waiting,
// gathering its batch's input, the forward pass, copying its rows out).
struct StatDuration {
  uint64_t count = 0, ns = 0;
};
struct BatchStats {
  uint64_t batch_size = 0;  // rows in a forward pass; count: passes of that size
  StatDuration compute_input, compute_infer, compute_output;
};
struct ModelStatistics {
  std::string name, version;
  uint64_t last_inference_ms = 0;  // since the epoch; 0 before the first
  uint64_t inference_count = 0;    // rows of successful requests
  uint64_t execution_count = 0;    // forward passes
  StatDuration success, fail, queue, compute_input, compute_infer, compute_output;
  std::vector<BatchStats> batches;  // by batch size, ascending
};

class Service {
 public:
  // Loads the network and the index files and starts the evaluator pool. Throws nn::Error
  // subclasses naming the file at fault; ArgumentError for options that contradict each other
  // or the network (a network with several input layers, an index longer than its layer).
  explicit Service(ServeOptions options, LogSink log = null_log());
  ~Service();  // drains, then stops the pool
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Answers one request; safe to call from many threads at once (each call blocks until its
  // answer is ready). Never throws: bad requests get 400/404/405/413, a draining service 503, an
  // engine failure 500, each with {"error": "..."}.
  ServeResponse handle(const ServeRequest& request);
  // The Open Inference Protocol's calls, typed (see OipStatus). `model` must be the service's
  // model_name() (404 otherwise); `version` "" or the version being served (404 otherwise).
  // health: liveness (always 200) or readiness (503 while draining).
  OipStatus health(bool readiness);
  OipStatus server_metadata(ServerMetadata& out);
  OipStatus model_ready(const std::string& model, const std::string& version);
  OipStatus model_metadata(const std::string& model, const std::string& version,
                           ModelMetadata& out);
  OipStatus model_config(const std::string& model, const std::string& version, ModelConfig& out);
  OipStatus model_statistics(const std::string& model, const std::string& version,
                             ModelStatistics& out);
  // Blocks until the answer is ready, as handle() does.
  OipStatus infer(InferRequest request, InferResponse& out);
  // Counts in the metrics a request that an HTTP front answered itself, before it could be
  // routed (malformed, over max_body, timed out, too many connections): status and seconds.
  void count_refused(int status, double seconds);
  // The metrics GET /metrics answers with (Prometheus text exposition format 0.0.4).
  std::string metrics() const;

  // Reads the network file (and the index files) again and makes them current; requests accepted
  // before finish on the model they were accepted with. Throws (the current model stays) when the
  // new files are unreadable or do not fit each other. Returns the new version.
  uint64_t reload();
  // True when the network file on disk is not the one the current model was loaded from
  // (another inode, size or modification time), e.g. nn-train replaced it.
  bool network_changed() const;

  // Stops taking work (ready and inference answer 503), then waits until every accepted request
  // has its answer. Idempotent.
  void drain();
  bool ready() const;

  const std::string& model_name() const;
  const ServeOptions& options() const;  // as given, threads resolved
  ServeStats stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nn::api
