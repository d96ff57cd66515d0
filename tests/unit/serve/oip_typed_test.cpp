// The Open Inference Protocol's typed calls (what nn-serve's gRPC front uses) against the JSON
// endpoints: the same answers bit for bit and the same refusals with the same statuses and
// messages; Triton's /config and /stats in Triton's shape, counting exactly the requests made;
// the /versions/<v>/ paths.
#include <cstring>

#include "serve_fixture.h"

namespace nn::serve_test {
namespace {

// The JSON body of an infer request for `t`.
std::string infer_body(const api::Tensor& t) {
  json in = {{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}, {"data", t.data}};
  return json{{"inputs", {in}}}.dump();
}

api::Tensor rows(uint64_t n, uint64_t cols, float seed) {
  api::Tensor t;
  t.name = "Input";
  t.shape = {int64_t(n), int64_t(cols)};
  for (uint64_t i = 0; i < n * cols; ++i) t.data.push_back(float((i * 7 + 3) % 11) / 11 + seed);
  return t;
}

bool same_bits(const std::vector<float>& a, const json& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const float f = b[i].get<float>();
    if (std::memcmp(&a[i], &f, sizeof f) != 0) return false;
  }
  return true;
}

TEST_F(ServeTest, TypedInferAnswersWhatJsonAnswers) {
  api::Service s(options());
  for (const api::Tensor& t : {rows(1, 32, 0), rows(3, 30, 0.5f), rows(2, 1, 2)}) {
    api::InferRequest r;
    r.model_name = "served";
    r.id = "x";
    r.inputs = {t};
    api::InferResponse typed;
    const api::OipStatus st = s.infer(r, typed);
    ASSERT_TRUE(st.ok()) << st.error;
    const api::ServeResponse js = post(s, "/v2/models/served/infer", infer_body(t));
    ASSERT_EQ(js.status, 200) << js.body;
    const json a = body(js);
    EXPECT_EQ(typed.model_name, "served");
    EXPECT_EQ(typed.model_version, "1");
    EXPECT_EQ(typed.id, "x");
    ASSERT_EQ(typed.outputs.size(), 1u);
    EXPECT_EQ(typed.outputs[0].name, "Output");
    EXPECT_EQ(json(typed.outputs[0].shape), a["outputs"][0]["shape"]);
    EXPECT_TRUE(same_bits(typed.outputs[0].data, a["outputs"][0]["data"]));
  }
  // Two outputs asked for by name, in that order.
  api::InferRequest r;
  r.model_name = "served";
  r.inputs = {rows(2, 32, 0)};
  r.outputs = {"Hidden", "Output"};
  api::InferResponse typed;
  ASSERT_TRUE(s.infer(r, typed).ok());
  ASSERT_EQ(typed.outputs.size(), 2u);
  EXPECT_EQ(typed.outputs[0].shape, (std::vector<int64_t>{2, 24}));
  EXPECT_EQ(typed.outputs[1].shape, (std::vector<int64_t>{2, 32}));
}

TEST_F(ServeTest, TypedRefusalsAreTheJsonOnes) {
  api::ServeOptions o = options();
  o.max_rows = 3;
  api::Service s(o);
  struct Case {
    api::Tensor t;
    int status;
    const char* text;
  };
  api::Tensor wide = rows(1, 33, 0), name = rows(1, 2, 0), type = rows(1, 2, 0);
  api::Tensor many = rows(4, 2, 0), count = rows(1, 2, 0), zero = rows(1, 2, 0);
  name.name = "In";
  type.datatype = "INT8";
  count.data.pop_back();
  zero.shape = {0, 2};
  zero.data.clear();
  for (const Case& c :
       {Case{wide, 400, "33 columns; input 'Input' has 32"},
        Case{name, 400, "unknown input \"In\""},
        Case{type, 400, "\"INT8\" is not served; use FP32"}, Case{many, 413, "4 rows; at most 3"},
        Case{count, 400, "1 numbers; shape [1,2] needs 2"},
        Case{zero, 400, "expected positive integers; got [0,2]"}}) {
    api::InferRequest r;
    r.model_name = "served";
    r.inputs = {c.t};
    api::InferResponse out;
    const api::OipStatus st = s.infer(r, out);
    EXPECT_EQ(st.status, c.status) << c.text;
    EXPECT_NE(st.error.find(c.text), std::string::npos) << st.error;
    const api::ServeResponse js = post(s, "/v2/models/served/infer", infer_body(c.t));
    EXPECT_EQ(js.status, c.status) << js.body;
    EXPECT_EQ(body(js)["error"], st.error);
  }
  // What only a binary front can send: a NaN.
  api::InferRequest r;
  r.model_name = "served";
  r.inputs = {rows(1, 2, 0)};
  r.inputs[0].data[1] = std::nanf("");
  api::InferResponse out;
  api::OipStatus st = s.infer(r, out);
  EXPECT_EQ(st.status, 400);
  EXPECT_NE(st.error.find("inputs[0].data[1]: not a finite float"), std::string::npos) << st.error;
  // Another model, another version: 404 as for the paths.
  r.inputs = {rows(1, 2, 0)};
  r.model_name = "other";
  st = s.infer(r, out);
  EXPECT_EQ(st.status, 404);
  EXPECT_EQ(st.error, body(post(s, "/v2/models/other/infer", infer_body(r.inputs[0])))["error"]);
  r.model_name = "served";
  r.model_version = "2";
  EXPECT_EQ(s.infer(r, out).status, 404);
  r.model_version = "1";
  EXPECT_TRUE(s.infer(r, out).ok());
  // Draining: 503, and readiness says so.
  s.drain();
  EXPECT_EQ(s.infer(r, out).status, 503);
  EXPECT_EQ(s.health(true).status, 503);
  EXPECT_TRUE(s.health(false).ok());
  EXPECT_EQ(s.model_ready("served", "").status, 503);
}

TEST_F(ServeTest, MetadataAndVersionPaths) {
  api::Service s(options());
  api::ModelMetadata m;
  ASSERT_TRUE(s.model_metadata("served", "", m).ok());
  EXPECT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].shape, (std::vector<int64_t>{-1, 32}));
  const json j = body(get(s, "/v2/models/served"));
  EXPECT_EQ(j["inputs"][0]["shape"], json(m.inputs[0].shape));
  EXPECT_EQ(body(get(s, "/v2/models/served/versions/1")), j);
  EXPECT_EQ(get(s, "/v2/models/served/versions/2").status, 404);
  EXPECT_EQ(get(s, "/v2/models/served/versions/1/ready").status, 200);
  EXPECT_EQ(post(s, "/v2/models/served/versions/1/infer", infer_body(rows(1, 2, 0))).status, 200);
  EXPECT_EQ(get(s, "/v2/models/served/versions").status, 404);
  EXPECT_EQ(s.model_metadata("other", "", m).status, 404);
  api::ServerMetadata sm;
  ASSERT_TRUE(s.server_metadata(sm).ok());
  const json v2 = body(get(s, "/v2"));
  EXPECT_EQ(v2["name"], sm.name);
  EXPECT_EQ(v2["version"], sm.version);
  EXPECT_EQ(v2["extensions"], json(sm.extensions));
  EXPECT_NE(v2["extensions"].dump().find("\"statistics\""), std::string::npos);
}

TEST_F(ServeTest, TritonConfigAndStatistics) {
  api::ServeOptions o = options();
  o.max_rows = 64;
  o.max_batch = 16;
  o.max_delay_ms = 1.5;
  api::Service s(o);
  const json c = body(get(s, "/v2/models/served/config"));
  EXPECT_EQ(c["name"], "served");
  EXPECT_EQ(c["max_batch_size"], 64);
  EXPECT_EQ(c["input"], json::parse(R"([{"name":"Input","data_type":"TYPE_FP32",
                                          "format":"FORMAT_NONE","dims":[32]}])"));
  EXPECT_EQ(c["output"], json::parse(R"([{"name":"Output","data_type":"TYPE_FP32","dims":[32]}])"));
  EXPECT_EQ(c["dynamic_batching"]["preferred_batch_size"], json::array({16}));
  EXPECT_EQ(c["dynamic_batching"]["max_queue_delay_microseconds"], 1500);

  const json before = body(get(s, "/v2/models/served/stats"))["model_stats"][0];
  EXPECT_EQ(before["inference_stats"]["success"]["count"], 0);
  EXPECT_EQ(before["last_inference"], 0);
  // 3 inference requests of 2 rows, 1 /recommend of 1 user, 2 refused (a bad shape, which
  // counts as a failure; another model, which is not this model's), 1 typed of 1 row.
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(post(s, "/v2/models/served/infer", infer_body(rows(2, 32, float(i)))).status, 200);
  ASSERT_EQ(post(s, "/recommend", R"({"items": ["m1"]})").status, 200);
  EXPECT_EQ(post(s, "/v2/models/served/infer", infer_body(rows(1, 40, 0))).status, 400);
  EXPECT_EQ(post(s, "/v2/models/other/infer", infer_body(rows(1, 4, 0))).status, 404);
  api::InferRequest r;
  r.model_name = "served";
  r.inputs = {rows(1, 32, 0)};
  api::InferResponse out;
  ASSERT_TRUE(s.infer(r, out).ok());

  const json st = body(get(s, "/v2/models/served/stats"))["model_stats"][0];
  EXPECT_EQ(st["name"], "served");
  EXPECT_EQ(st["version"], "1");
  EXPECT_GT(st["last_inference"].get<uint64_t>(), 1600000000000u);  // milliseconds since 1970
  EXPECT_EQ(st["inference_count"], 3 * 2 + 1 + 1);
  const json& is = st["inference_stats"];
  EXPECT_EQ(is["success"]["count"], 5);
  EXPECT_EQ(is["fail"]["count"], 1);
  for (const char* k : {"queue", "compute_input", "compute_infer", "compute_output"})
    EXPECT_EQ(is[k]["count"], 5) << k;
  EXPECT_GT(is["compute_infer"]["ns"].get<uint64_t>(), 0u);
  // Each phase is part of a request's time, so the parts never exceed the whole.
  EXPECT_LE(is["queue"]["ns"].get<uint64_t>() + is["compute_input"]["ns"].get<uint64_t>() +
                is["compute_infer"]["ns"].get<uint64_t>() +
                is["compute_output"]["ns"].get<uint64_t>(),
            is["success"]["ns"].get<uint64_t>());
  EXPECT_EQ(is["cache_hit"]["count"], 0);
  // Requests one at a time: a forward pass each, by batch size.
  EXPECT_EQ(st["execution_count"], 5);
  uint64_t passes = 0, rows_in_passes = 0;
  for (const json& b : st["batch_stats"]) {
    passes += b["compute_infer"]["count"].get<uint64_t>();
    rows_in_passes += b["batch_size"].get<uint64_t>() * b["compute_infer"]["count"].get<uint64_t>();
    EXPECT_EQ(b["compute_input"]["count"], b["compute_infer"]["count"]);
  }
  EXPECT_EQ(passes, 5u);
  EXPECT_EQ(rows_in_passes, 8u);
  // The typed call sees the same numbers; every model's statistics are this one's.
  api::ModelStatistics typed;
  ASSERT_TRUE(s.model_statistics("served", "", typed).ok());
  EXPECT_EQ(typed.success.count, 5u);
  EXPECT_EQ(typed.inference_count, 8u);
  EXPECT_EQ(body(get(s, "/v2/models/stats"))["model_stats"][0]["inference_count"], 8);
  api::ModelConfig cfg;
  ASSERT_TRUE(s.model_config("served", "", cfg).ok());
  EXPECT_EQ(cfg.max_batch_size, 64);
  EXPECT_EQ(cfg.inputs[0].shape, (std::vector<int64_t>{32}));
}

}  // namespace
}  // namespace nn::serve_test
