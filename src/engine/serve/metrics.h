// The Service's Prometheus metrics: counters and histograms kept in atomics (a request adds to
// them without taking a lock), written on demand in the Prometheus text exposition format
// (version 0.0.4) for GET /metrics. Label sets are fixed and small (endpoint families and the
// statuses the server answers), so a client choosing odd paths cannot grow the output.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nn::serve {

// Cumulative-bucket histogram: `bounds` are the buckets' upper limits, ascending.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // Appends the family's samples (<name>_bucket{le=...}, <name>_sum, <name>_count); the HELP and
  // TYPE lines are the caller's.
  void write(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket (not cumulative), then +Inf
  std::atomic<uint64_t> sum_bits_{0};                // the sum, a double's bits (CAS to add)
};

// What a request asked for, as a label: a handful of values whatever the path.
enum class Endpoint { Recommend, Infer, Health, Metadata, Metrics, Unknown, Refused, Count };
Endpoint endpoint_of(const std::string& path);

class Metrics {
 public:
  Metrics();
  // An answered request: its endpoint, status and seconds from arrival to answer.
  void request(Endpoint endpoint, int status, double seconds);
  void queue_time(double seconds);  // a job's wait from queueing to its batch starting
  void batch(uint64_t rows);        // a forward pass of `rows` rows
  void reload(bool ok);
  std::atomic<int64_t> in_flight{0};  // requests being answered (Service::handle running)

  // The whole exposition; `model` and `version` describe the model being served.
  std::string text(const std::string& model, uint64_t version) const;

 private:
  static constexpr int kStatuses = 12;  // the slots of status_slot(); the last one is "other"
  static int status_slot(int status);
  std::atomic<uint64_t> requests_[int(Endpoint::Count)][kStatuses] = {};
  Histogram latency_, queue_, batch_rows_;
  std::atomic<uint64_t> reloads_{0}, reload_failures_{0};
};

// Escapes a label value for the text format (backslash, double quote, newline).
std::string prometheus_label(const std::string& value);

}  // namespace nn::serve
