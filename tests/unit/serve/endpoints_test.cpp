// The Service's endpoints in-process: /recommend (one user, a list, values, exclusion, unknown
// names, k), the Open Inference Protocol v2 endpoints (health, server and model metadata, infer
// with fewer columns than the layer), and the CDL Command Serve.
#include <fstream>

#include "serve_fixture.h"

namespace nn::serve_test {
namespace {

TEST_F(ServeTest, HealthAndMetadata) {
  api::Service s(options());
  EXPECT_EQ(s.model_name(), "served");
  EXPECT_EQ(get(s, "/v2/health/live").status, 200);
  EXPECT_EQ(body(get(s, "/v2/health/ready"))["ready"], true);
  EXPECT_EQ(body(get(s, "/v2"))["name"], "nn-serve");
  EXPECT_EQ(body(get(s, "/v2/models/served/ready"))["ready"], true);
  const json meta = body(get(s, "/v2/models/served"));
  EXPECT_EQ(meta["name"], "served");
  EXPECT_EQ(meta["platform"], "nn");
  EXPECT_EQ(meta["versions"], json::array({"1"}));
  EXPECT_EQ(meta["inputs"], json::parse(R"([{"name":"Input","datatype":"FP32","shape":[-1,32]}])"));
  EXPECT_EQ(meta["outputs"],
            json::parse(R"([{"name":"Output","datatype":"FP32","shape":[-1,32]}])"));
}

TEST_F(ServeTest, RecommendAnswersWithNamesAndMatchesTheEvaluator) {
  api::ServeOptions o = options();
  api::Service s(o);
  const api::ServeResponse r = post(s, "/recommend", R"({"items": ["m3", "m7", "zz"], "k": 5})");
  ASSERT_EQ(r.status, 200) << r.body;
  const json a = body(r);
  ASSERT_EQ(a["items"].size(), 5u);
  ASSERT_EQ(a["scores"].size(), 5u);
  EXPECT_EQ(a["unknown"], json::array({"zz"}));
  EXPECT_EQ(a["model_version"], "1");
  // The same top 5 from an Evaluator (scores equal within float rounding: the Evaluator here
  // uses OpenBLAS, the service the batch-invariant gemm), the given items and the padding left out.
  auto model = api::Model::load(o.network);
  api::Evaluator ev(model);
  const uint64_t ptr[] = {0, 2};
  const uint32_t idx[] = {3, 7}, ex_idx[] = {3, 7, 30, 31};
  const uint64_t ex_ptr[] = {0, 4};
  uint32_t top[5];
  float score[5];
  const api::Exclusion ex{ex_ptr, ex_idx, 1};
  ev.top_k(api::CsrInput{ptr, idx, nullptr, 1, kWidth}, 5, "", &ex, top, score);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(a["items"][i], "m" + std::to_string(top[i]));
    EXPECT_NEAR(a["scores"][i].get<double>(), score[i], 1e-6);
    EXPECT_NE(a["items"][i], "m3");
    EXPECT_NE(a["items"][i], "m7");
  }
  // Scores are written with the digits that read back as the same float, best first.
  for (int i = 1; i < 5; ++i) EXPECT_GE(a["scores"][i - 1], a["scores"][i]);
}

TEST_F(ServeTest, ListsValuesExclusionAndKs) {
  api::Service s(options());
  const api::ServeResponse r = post(s, "/recommend", R"([
      {"items": ["m1", "m2"]},
      {"items": ["m1", "m2"], "exclude": false, "k": 30},
      {"items": [], "k": 2},
      {"items": ["m4"], "values": [2.5], "k": 3},
      {"items": [4], "values": [2.5], "k": 3}])");
  ASSERT_EQ(r.status, 200) << r.body;
  const json a = body(r);
  ASSERT_TRUE(a.is_array());
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[0]["items"].size(), 10u);  // the default k
  // exclude false: every named output is ranked, the given items too (30 named of 32 units).
  EXPECT_EQ(a[1]["items"].size(), 30u);
  bool has_m1 = false;
  for (const json& i : a[1]["items"]) has_m1 = has_m1 || i == "m1";
  EXPECT_TRUE(has_m1);
  for (const json& i : a[0]["items"]) EXPECT_TRUE(i != "m1" && i != "m2");
  EXPECT_EQ(a[2]["items"].size(), 2u);
  // An analog value changes the answer; an integer name is its decimal text ("4" is unknown).
  EXPECT_NE(a[3]["scores"], body(post(s, "/recommend", R"({"items": ["m4"], "k": 3})"))["scores"]);
  EXPECT_EQ(a[4]["unknown"], json::array({"4"}));
  // Item order does not matter (rows are sorted by column).
  EXPECT_EQ(post(s, "/recommend", R"({"items": ["m9", "m2", "m5"]})").body,
            post(s, "/recommend", R"({"items": ["m5", "m9", "m2"]})").body);
  // An empty list is an empty answer.
  EXPECT_EQ(post(s, "/recommend", "[]").body, "[]");
}

TEST_F(ServeTest, InferIsTheOutputLayerAndTakesNarrowRows) {
  api::ServeOptions o = options();
  api::Service s(o);
  // Two rows of 30 columns (the index's width) for a 32-unit input layer: padded with zeros.
  json req = {
      {"id", "r1"},
      {"inputs",
       {{{"name", "Input"}, {"shape", {2, 30}}, {"datatype", "FP32"}, {"data", json::array()}}}}};
  std::vector<float> x(60, 0.0f);
  x[3] = x[7] = 1.0f;
  x[30 + 1] = 2.0f;
  for (float v : x) req["inputs"][0]["data"].push_back(v);
  const api::ServeResponse r = post(s, "/v2/models/served/infer", req.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json a = body(r);
  EXPECT_EQ(a["model_name"], "served");
  EXPECT_EQ(a["model_version"], "1");
  EXPECT_EQ(a["id"], "r1");
  ASSERT_EQ(a["outputs"].size(), 1u);
  EXPECT_EQ(a["outputs"][0]["name"], "Output");
  EXPECT_EQ(a["outputs"][0]["shape"], json::array({2, 32}));
  auto model = api::Model::load(o.network);
  api::Evaluator ev(model);
  std::vector<float> want(64);
  ev.outputs(api::DenseInput{x.data(), 2, 30}, "", want.data());
  for (size_t i = 0; i < 64; ++i)
    EXPECT_NEAR(a["outputs"][0]["data"][i].get<double>(), want[i], 1e-6) << i;
  // Nested data and another layer by name.
  json nested = req;
  nested["inputs"][0]["data"] = json::array({json(std::vector<float>(x.begin(), x.begin() + 30)),
                                             json(std::vector<float>(x.begin() + 30, x.end()))});
  nested["outputs"] = {{{"name", "Hidden"}}};
  const json h = body(post(s, "/v2/models/served/infer", nested.dump()));
  EXPECT_EQ(h["outputs"][0]["name"], "Hidden");
  EXPECT_EQ(h["outputs"][0]["shape"], json::array({2, 24}));
}

TEST_F(ServeTest, CommandFileServe) {
  std::ofstream(path("serve.cdl")) << R"({"Command": "Serve", "Network": "network.nc",
      "ServeParameters": {"InputIndex": "input.idx", "OutputIndex": "output.idx", "Port": 0,
      "GrpcPort": 8001, "GrpcTlsCert": "tls/chain.pem", "GrpcTlsKey": "/etc/key.pem",
      "MaxBatch": 16, "MaxDelayMs": 0.5, "K": 3, "ModelName": "m"}})";
  const api::ServeOptions o = api::serve_options(api::CommandFile::read(path("serve.cdl")));
  EXPECT_EQ(o.network, path("network.nc"));
  EXPECT_EQ(o.input_index, path("input.idx"));
  EXPECT_EQ(o.port, 0);
  EXPECT_EQ(o.grpc_port, 8001);
  // TLS files: a relative path is the command file's, an absolute one stays.
  EXPECT_EQ(o.grpc_tls_cert, path("tls/chain.pem"));
  EXPECT_EQ(o.grpc_tls_key, "/etc/key.pem");
  EXPECT_EQ(o.max_batch, 16u);
  EXPECT_EQ(o.max_delay_ms, 0.5);
  EXPECT_EQ(o.default_k, 3u);
  api::Service s(o);
  EXPECT_EQ(s.model_name(), "m");
  EXPECT_EQ(body(post(s, "/recommend", R"({"items": ["m1"]})"))["items"].size(), 3u);
  std::ofstream(path("bad.cdl")) << R"({"Command": "Serve", "Network": "network.nc",
      "ServeParameters": {"Prot": 1}})";
  EXPECT_THROW(api::CommandFile::read(path("bad.cdl")), ConfigError);
  std::ofstream(path("port.cdl")) << R"({"Command": "Serve", "Network": "network.nc",
      "ServeParameters": {"InputIndex": "input.idx", "OutputIndex": "output.idx",
      "GrpcPort": 70000}})";
  EXPECT_THROW(api::CommandFile::read(path("port.cdl")), ConfigError);
  // No GrpcPort: no gRPC.
  std::ofstream(path("plain.cdl")) << R"({"Command": "Serve", "Network": "network.nc",
      "ServeParameters": {"InputIndex": "input.idx", "OutputIndex": "output.idx"}})";
  const api::ServeOptions plain = api::serve_options(api::CommandFile::read(path("plain.cdl")));
  EXPECT_EQ(plain.grpc_port, -1);
  EXPECT_TRUE(plain.grpc_tls_cert.empty() && plain.grpc_tls_key.empty());
}

}  // namespace
}  // namespace nn::serve_test
