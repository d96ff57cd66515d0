// The Service's Prometheus metrics (serve/metrics.h) and their text exposition.
#include "serve/metrics.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace nn::serve {
namespace {

// Shortest text that reads back as the same double, as the format wants (Go's ParseFloat).
std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

// Latency buckets from half a millisecond (a cached answer on loopback) to 10 s (a reload-sized
// stall); batch sizes in powers of two up to the largest max_batch anyone sets.
std::vector<double> second_buckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}
std::vector<double> row_buckets() {
  std::vector<double> b;
  for (double r = 1; r <= 65536; r *= 2) b.push_back(r);
  return b;
}

// The statuses nn-serve answers; anything else is counted under "other".
constexpr int kKnownStatuses[] = {200, 400, 404, 405, 408, 413, 414, 431, 500, 503, 505};

const char* endpoint_name(Endpoint e) {
  switch (e) {
    case Endpoint::Recommend:
      return "recommend";
    case Endpoint::Infer:
      return "infer";
    case Endpoint::Health:
      return "health";
    case Endpoint::Metadata:
      return "metadata";
    case Endpoint::Metrics:
      return "metrics";
    case Endpoint::Unknown:
      return "unknown";
    case Endpoint::Refused:
      return "refused";
    case Endpoint::Count:
      break;
  }
  return "unknown";
}

void family(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

// Resident and virtual size from /proc/self/statm (pages); zeros where it cannot be read.
void process_memory(uint64_t& resident, uint64_t& virtual_size) {
  resident = virtual_size = 0;
  std::ifstream statm("/proc/self/statm");
  uint64_t pages_virtual = 0, pages_resident = 0;
  if (!(statm >> pages_virtual >> pages_resident)) return;
  const long page = ::sysconf(_SC_PAGESIZE);
  resident = pages_resident * uint64_t(page > 0 ? page : 4096);
  virtual_size = pages_virtual * uint64_t(page > 0 ? page : 4096);
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double value) {
  const size_t slot =
      size_t(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  counts_[slot].fetch_add(1, std::memory_order_relaxed);
  uint64_t old_bits = sum_bits_.load(std::memory_order_relaxed), new_bits;
  do {
    double sum;
    std::memcpy(&sum, &old_bits, sizeof sum);
    sum += value;
    std::memcpy(&new_bits, &sum, sizeof sum);
  } while (!sum_bits_.compare_exchange_weak(old_bits, new_bits, std::memory_order_relaxed));
}

void Histogram::write(std::string& out, const std::string& name) const {
  // The count is the buckets' total as read here, so +Inf and _count always agree even while
  // other threads observe (the sum may be a few observations ahead or behind; it is a float).
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += name + "_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  const uint64_t bits = sum_bits_.load(std::memory_order_relaxed);
  double sum;
  std::memcpy(&sum, &bits, sizeof sum);
  out += name + "_sum " + number(sum) + "\n";
  out += name + "_count " + std::to_string(cumulative) + "\n";
}

Endpoint endpoint_of(const std::string& path) {
  auto starts = [&](const char* prefix) { return path.rfind(prefix, 0) == 0; };
  if (path == "/recommend") return Endpoint::Recommend;
  if (path == "/metrics") return Endpoint::Metrics;
  if (starts("/v2/health/")) return Endpoint::Health;
  if (starts("/v2/models/") && path.size() > 6 && path.compare(path.size() - 6, 6, "/infer") == 0)
    return Endpoint::Infer;
  if (path == "/v2" || path == "/v2/" || starts("/v2/models/")) return Endpoint::Metadata;
  return Endpoint::Unknown;
}

std::string prometheus_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

Metrics::Metrics()
    : latency_(second_buckets()), queue_(second_buckets()), batch_rows_(row_buckets()) {}

int Metrics::status_slot(int status) {
  for (int i = 0; i < kStatuses - 1; ++i)
    if (kKnownStatuses[i] == status) return i;
  return kStatuses - 1;
}

void Metrics::request(Endpoint endpoint, int status, double seconds) {
  requests_[int(endpoint)][status_slot(status)].fetch_add(1, std::memory_order_relaxed);
  latency_.observe(seconds);
}

void Metrics::queue_time(double seconds) {
  queue_.observe(seconds);
}
void Metrics::batch(uint64_t rows) {
  batch_rows_.observe(double(rows));
}
void Metrics::reload(bool ok) {
  (ok ? reloads_ : reload_failures_).fetch_add(1, std::memory_order_relaxed);
}

std::string Metrics::text(const std::string& model, uint64_t version) const {
  static_assert(sizeof kKnownStatuses / sizeof kKnownStatuses[0] == kStatuses - 1,
                "one slot per known status, and one for the others");
  std::string out;
  out.reserve(8192);
  family(out, "nn_serve_requests_total", "counter",
         "Requests answered, by endpoint and HTTP status (endpoint \"refused\": answered by the "
         "HTTP front before routing: malformed, over --max-body, timed out, too many "
         "connections).");
  for (int e = 0; e < int(Endpoint::Count); ++e)
    for (int s = 0; s < kStatuses; ++s) {
      const uint64_t n = requests_[e][s].load(std::memory_order_relaxed);
      if (n == 0) continue;  // a series appears once it has happened
      const std::string code = s < kStatuses - 1 ? std::to_string(kKnownStatuses[s]) : "other";
      out += std::string("nn_serve_requests_total{endpoint=\"") + endpoint_name(Endpoint(e)) +
             "\",code=\"" + code + "\"} " + std::to_string(n) + "\n";
    }
  family(out, "nn_serve_request_duration_seconds", "histogram",
         "Time from a request's arrival (fully read) to its answer.");
  latency_.write(out, "nn_serve_request_duration_seconds");
  family(out, "nn_serve_queue_duration_seconds", "histogram",
         "Time a request's rows waited in the batcher's queue before their forward pass began.");
  queue_.write(out, "nn_serve_queue_duration_seconds");
  family(out, "nn_serve_batch_rows", "histogram",
         "Rows (users) per forward pass; the count is the number of passes.");
  batch_rows_.write(out, "nn_serve_batch_rows");
  family(out, "nn_serve_requests_in_flight", "gauge", "Requests being answered now.");
  out += "nn_serve_requests_in_flight " +
         std::to_string(std::max<int64_t>(0, in_flight.load(std::memory_order_relaxed))) + "\n";
  family(out, "nn_serve_model_version", "gauge",
         "Version of the model being served (1: the network loaded at start; +1 a reload).");
  out += "nn_serve_model_version " + std::to_string(version) + "\n";
  family(out, "nn_serve_model_info", "gauge", "The served model's name and version (always 1).");
  out += "nn_serve_model_info{model=\"" + prometheus_label(model) + "\",version=\"" +
         std::to_string(version) + "\"} 1\n";
  family(out, "nn_serve_reloads_total", "counter", "Successful reloads of the network file.");
  out += "nn_serve_reloads_total " + std::to_string(reloads_.load()) + "\n";
  family(out, "nn_serve_reload_failures_total", "counter",
         "Reloads refused (unreadable or unsuitable network or index files); the previous model "
         "kept serving.");
  out += "nn_serve_reload_failures_total " + std::to_string(reload_failures_.load()) + "\n";
  uint64_t resident = 0, virtual_size = 0;
  process_memory(resident, virtual_size);
  family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  out += "process_resident_memory_bytes " + std::to_string(resident) + "\n";
  family(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
  out += "process_virtual_memory_bytes " + std::to_string(virtual_size) + "\n";
  return out;
}

}  // namespace nn::serve
