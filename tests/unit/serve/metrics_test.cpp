// GET /metrics in-process: the Prometheus text exposition counts requests by endpoint and status,
// observes latency, queue time and batch sizes (histogram buckets cumulative, +Inf equal to the
// count), follows reloads and their failures, and counts what a front refused; the histogram's
// buckets on their own.
#include "serve/metrics.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "serve_fixture.h"

namespace nn::serve_test {
namespace {

// Sample lines "name{labels} value" -> value (comments skipped).
std::map<std::string, double> samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

TEST_F(ServeTest, MetricsCountRequestsByEndpointAndStatus) {
  api::Service s(options());
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(post(s, "/recommend", R"({"items": ["m1"], "k": 2})").status, 200);
  EXPECT_EQ(post(s, "/recommend", "{").status, 400);
  EXPECT_EQ(get(s, "/v2/health/live").status, 200);
  EXPECT_EQ(get(s, "/nowhere").status, 404);
  s.count_refused(413, 0.001);
  const api::ServeResponse r = get(s, "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  const auto m = samples(r.body);
  EXPECT_EQ(m.at("nn_serve_requests_total{endpoint=\"recommend\",code=\"200\"}"), 3);
  EXPECT_EQ(m.at("nn_serve_requests_total{endpoint=\"recommend\",code=\"400\"}"), 1);
  EXPECT_EQ(m.at("nn_serve_requests_total{endpoint=\"health\",code=\"200\"}"), 1);
  EXPECT_EQ(m.at("nn_serve_requests_total{endpoint=\"unknown\",code=\"404\"}"), 1);
  EXPECT_EQ(m.at("nn_serve_requests_total{endpoint=\"refused\",code=\"413\"}"), 1);
  // Seven answered before this one (the /metrics request itself is counted after it answers).
  EXPECT_EQ(m.at("nn_serve_request_duration_seconds_count"), 7);
  EXPECT_EQ(m.at("nn_serve_request_duration_seconds_bucket{le=\"+Inf\"}"), 7);
  // Three forward passes of one row each; each queued job observed once.
  EXPECT_EQ(m.at("nn_serve_batch_rows_count"), 3);
  EXPECT_EQ(m.at("nn_serve_batch_rows_sum"), 3);
  EXPECT_EQ(m.at("nn_serve_batch_rows_bucket{le=\"1\"}"), 3);
  EXPECT_EQ(m.at("nn_serve_queue_duration_seconds_count"), 3);
  EXPECT_EQ(m.at("nn_serve_requests_in_flight"), 1);  // the /metrics request
  EXPECT_EQ(m.at("nn_serve_model_version"), 1);
  EXPECT_EQ(m.at("nn_serve_model_info{model=\"served\",version=\"1\"}"), 1);
  EXPECT_GT(m.at("process_resident_memory_bytes"), 1e6);
  EXPECT_EQ(m.count("nn_serve_requests_total{endpoint=\"infer\",code=\"200\"}"), 0u);
}

TEST_F(ServeTest, MetricsFollowReloadsAndTheirFailures) {
  api::ServeOptions o = options();
  api::Service s(o);
  s.reload();
  std::FILE* f = std::fopen(o.network.c_str(), "w");
  std::fputs("not a network", f);
  std::fclose(f);
  EXPECT_ANY_THROW(s.reload());
  const auto m = samples(s.metrics());
  EXPECT_EQ(m.at("nn_serve_reloads_total"), 1);
  EXPECT_EQ(m.at("nn_serve_reload_failures_total"), 1);
  EXPECT_EQ(m.at("nn_serve_model_version"), 2);
}

TEST(ServeMetrics, HistogramBucketsAreCumulative) {
  serve::Histogram h({0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 5.0, 50.0}) h.observe(v);
  std::string text;
  h.write(text, "x");
  EXPECT_EQ(text,
            "x_bucket{le=\"0.1\"} 2\nx_bucket{le=\"1\"} 3\nx_bucket{le=\"10\"} 4\n"
            "x_bucket{le=\"+Inf\"} 5\nx_sum 55.65\nx_count 5\n");
}

TEST(ServeMetrics, EndpointLabelsAreAFixedSet) {
  EXPECT_EQ(serve::endpoint_of("/recommend"), serve::Endpoint::Recommend);
  EXPECT_EQ(serve::endpoint_of("/v2/models/x/infer"), serve::Endpoint::Infer);
  EXPECT_EQ(serve::endpoint_of("/v2/models/x"), serve::Endpoint::Metadata);
  EXPECT_EQ(serve::endpoint_of("/v2/health/ready"), serve::Endpoint::Health);
  EXPECT_EQ(serve::endpoint_of("/metrics"), serve::Endpoint::Metrics);
  EXPECT_EQ(serve::endpoint_of("/a/b/c"), serve::Endpoint::Unknown);
  EXPECT_EQ(serve::prometheus_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

}  // namespace
}  // namespace nn::serve_test
