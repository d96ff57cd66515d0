// Dynamic batching and reload under concurrent load: requests from many threads are gathered into
// shared minibatches, and each answer is, byte for byte, the one a service without batching
// gives the same request alone. Reloading the network while requests are in flight loses none:
// every answer is the one of the model version it names. A bad new file leaves the old model.
#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "serve_fixture.h"

namespace nn::serve_test {
namespace {

// A mix of requests: single users, lists, analog values, unknown names, k and exclude varied,
// and OIP inference rows.
std::vector<std::pair<std::string, std::string>> request_mix(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::pair<std::string, std::string>> out;
  auto user = [&] {
    json u;
    u["items"] = json::array();
    const int items = int(rng() % 8);
    std::vector<int> used;
    for (int i = 0; i < items; ++i) {
      const int m = int(rng() % 32);  // 30 and 31 are unknown names
      if (std::find(used.begin(), used.end(), m) != used.end()) continue;
      used.push_back(m);
      u["items"].push_back("m" + std::to_string(m));
    }
    if (rng() % 3 == 0) {
      u["values"] = json::array();
      for (size_t i = 0; i < u["items"].size(); ++i) u["values"].push_back(0.5 + (rng() % 4));
    }
    if (rng() % 2) u["k"] = 1 + rng() % 30;
    if (rng() % 4 == 0) u["exclude"] = false;
    return u;
  };
  for (int i = 0; i < n; ++i) {
    const uint32_t kind = rng() % 6;
    if (kind == 0) {
      json list = json::array();
      for (uint32_t u = 0, users = 2 + rng() % 3; u < users; ++u) list.push_back(user());
      out.emplace_back("/recommend", list.dump());
    } else if (kind == 1) {
      const int rows = 1 + int(rng() % 3);
      json data = json::array();
      for (int v = 0; v < rows * 30; ++v) data.push_back(rng() % 5 == 0 ? 1.0 : 0.0);
      json req = {
          {"inputs",
           {{{"name", "Input"}, {"shape", {rows, 30}}, {"datatype", "FP32"}, {"data", data}}}}};
      out.emplace_back("/v2/models/served/infer", req.dump());
    } else {
      out.emplace_back("/recommend", user().dump());
    }
  }
  return out;
}

// The answer without "model_version" (compared across services whose versions differ).
json without_version(const std::string& body) {
  json j = json::parse(body);
  if (j.is_array())
    for (json& u : j) u.erase("model_version");
  else
    j.erase("model_version");
  return j;
}

TEST_F(ServeTest, BatchedAnswersEqualSingleAnswersUnderConcurrentLoad) {
  api::ServeOptions batched_options = options();
  batched_options.max_batch = 64;
  batched_options.max_delay_ms = 20;  // long enough to gather many requests on a loaded machine
  // One worker: while it runs a batch the other clients' requests queue behind it (with two, a
  // busy machine once served all 240 requests alone, each arriving at an idle worker).
  batched_options.threads = 1;
  api::Service batched(batched_options);
  api::ServeOptions single_options = options();
  single_options.max_batch = 1;
  single_options.max_delay_ms = 0;
  single_options.threads = 1;
  api::Service single(single_options);

  const auto requests = request_mix(240, 7);
  std::vector<api::ServeResponse> got(requests.size());
  std::vector<std::thread> clients;
  constexpr int kClients = 16;
  std::atomic<bool> go{false};  // every client starts at once
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      while (!go.load()) std::this_thread::yield();
      for (size_t i = size_t(c); i < requests.size(); i += kClients)
        got[i] = post(batched, requests[i].first, requests[i].second);
    });
  go.store(true);
  for (std::thread& t : clients) t.join();
  for (size_t i = 0; i < requests.size(); ++i) {
    const api::ServeResponse want = post(single, requests[i].first, requests[i].second);
    ASSERT_EQ(want.status, 200) << requests[i].second << " -> " << want.body;
    ASSERT_EQ(got[i].status, 200) << got[i].body;
    EXPECT_EQ(got[i].body, want.body) << "request " << i << ": " << requests[i].second;
  }
  const api::ServeStats st = batched.stats();
  EXPECT_GT(st.max_rows_in_batch, 1u) << "no batch held more than one row";
  EXPECT_LT(st.batches, requests.size()) << "every request ran alone";
  EXPECT_EQ(single.stats().max_rows_in_batch, 4u);  // the largest single request
  EXPECT_EQ(st.in_flight, 0u);
}

TEST_F(ServeTest, ReloadWithRequestsInFlightLosesNone) {
  api::ServeOptions o = options();
  o.max_delay_ms = 1;
  api::Service s(o);
  // What each network answers, from services that never reload.
  api::ServeOptions o1 = options(), o2 = options();
  o1.network = path("net1.nc");
  o2.network = path("net2.nc");
  api::Service alone1(o1), alone2(o2);
  const auto requests = request_mix(40, 11);
  std::vector<json> want1, want2;
  for (const auto& [p, b] : requests) {
    want1.push_back(without_version(post(alone1, p, b).body));
    want2.push_back(without_version(post(alone2, p, b).body));
  }
  ASSERT_NE(want1, want2) << "the two networks answer alike: the test would prove nothing";

  std::atomic<bool> stop{false};
  std::atomic<int> failures{0}, checked{0};
  std::mutex seen_mutex;
  std::map<std::string, int> versions_seen;
  std::vector<std::thread> clients;
  for (int c = 0; c < 6; ++c)
    clients.emplace_back([&, c] {
      for (size_t i = size_t(c); !stop; i = (i + 7) % requests.size()) {
        const api::ServeResponse r = post(s, requests[i].first, requests[i].second);
        if (r.status != 200) {
          ++failures;
          ADD_FAILURE() << r.status << " " << r.body;
          continue;
        }
        const json j = json::parse(r.body);
        const std::string v = j.is_array()
                                  ? (j.empty() ? "" : j[0]["model_version"].get<std::string>())
                                  : j["model_version"].get<std::string>();
        if (v.empty()) continue;
        // Odd versions are net1 (the start, and every second reload), even ones net2.
        const json& want = (std::stoi(v) % 2 == 1 ? want1 : want2)[i];
        if (without_version(r.body) != want) {
          ++failures;
          ADD_FAILURE() << "version " << v << " answered request " << i << " as another model";
        }
        ++checked;
        std::lock_guard<std::mutex> lock(seen_mutex);
        ++versions_seen[v];
      }
    });
  for (int reload = 0; reload < 6; ++reload) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    // Replaced the way nn-train writes it: a new file renamed over the old.
    std::filesystem::copy_file(path(reload % 2 == 0 ? "net2.nc" : "net1.nc"), path("next.nc"),
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::rename(path("next.nc"), path("network.nc"));
    EXPECT_TRUE(s.network_changed());
    EXPECT_EQ(s.reload(), uint64_t(reload + 2));
    EXPECT_FALSE(s.network_changed());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  stop = true;
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(checked.load(), 50);
  EXPECT_GE(versions_seen.size(), 3u) << "requests did not span the reloads";
  EXPECT_EQ(s.stats().reloads, 6u);
  EXPECT_EQ(s.stats().version, 7u);
  EXPECT_EQ(body(get(s, "/v2/models/served"))["versions"], json::array({"7"}));
}

TEST_F(ServeTest, AFailedReloadKeepsTheCurrentModel) {
  api::Service s(options());
  const std::string before = post(s, "/recommend", R"({"items": ["m2"]})").body;
  {
    std::ofstream broken(path("next.nc"), std::ios::binary);
    broken << "not a network file";
  }
  std::filesystem::rename(path("next.nc"), path("network.nc"));
  EXPECT_TRUE(s.network_changed());
  EXPECT_THROW(s.reload(), Error);
  EXPECT_EQ(s.stats().version, 1u);
  EXPECT_EQ(post(s, "/recommend", R"({"items": ["m2"]})").body, before);
  EXPECT_TRUE(s.ready());
}

// A network slow enough that one large request is still running while the test looks: two
// hidden layers of 1536 units, 4096 rows (about 40 GFLOP).
std::string slow_network(const std::string& file) {
  api::DataShape shape;
  shape.width = kWidth;
  shape.sparse = true;
  auto m = api::Model::from_json(R"({ "Name": "served", "ErrorFunction": "CrossEntropy",
    "Layers": [
      { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
      { "Name": "H1", "Kind": "Hidden", "N": 1536, "Activation": "Sigmoid" },
      { "Name": "H2", "Kind": "Hidden", "N": 1536, "Activation": "Sigmoid" },
      { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
        "Activation": "Sigmoid" } ] })",
                                 {{"input", shape}, {"output", shape}}, 3);
  m->save(file);
  json users = json::array();
  for (int u = 0; u < 4096; ++u)
    users.push_back(
        {{"items", {"m" + std::to_string(u % 15), "m" + std::to_string(15 + u % 13)}}, {"k", 3}});
  return users.dump();
}

TEST_F(ServeTest, DrainWaitsForAcceptedRequestsAndRefusesNewOnes) {
  api::ServeOptions o = options();
  o.network = path("slow.nc");
  o.threads = 1;
  o.max_body = 64 << 20;
  const std::string big = slow_network(o.network);
  api::Service s(o);
  std::atomic<int> big_status{0};
  std::string big_body;
  std::thread client([&] {
    const api::ServeResponse r = post(s, "/recommend", big);
    big_body = r.body.substr(0, 200);
    big_status = r.status;
  });
  while (s.stats().in_flight < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    s.drain();  // returns once the large request is answered
    drained = true;
  });
  while (s.ready()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Draining: new work and readiness get 503 with a JSON error, liveness stays.
  const api::ServeResponse late = post(s, "/recommend", R"({"items": ["m1"]})");
  const api::ServeResponse ready = get(s, "/v2/health/ready");
  const bool big_was_running = big_status.load() == 0 && !drained.load();
  EXPECT_EQ(late.status, 503);
  EXPECT_NE(late.body.find("shutting down"), std::string::npos) << late.body;
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(get(s, "/v2/health/live").status, 200);
  drainer.join();
  client.join();
  EXPECT_TRUE(big_was_running) << "the large request ended before the checks (too fast here)";
  EXPECT_EQ(big_status.load(), 200) << big_body;
  EXPECT_EQ(s.stats().in_flight, 0u);
}

// With nobody else on the way, a request does not wait max_delay for company.
TEST_F(ServeTest, ALoneRequestDoesNotWaitForABatch) {
  api::ServeOptions o = options();
  o.max_delay_ms = 2000;
  api::Service s(o);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(post(s, "/recommend", R"({"items": ["m1"]})").status, 200);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.5) << "each request waited for the 2 s batch delay";
}

}  // namespace
}  // namespace nn::serve_test
