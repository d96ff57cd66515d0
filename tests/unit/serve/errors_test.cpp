// Every class of bad request gets a JSON error with its status and never disturbs the service:
// 400 malformed or unknown fields, 404 unknown model or path, 405 wrong method, 413 too large,
// 503 while draining. And options the service refuses at start.
#include "serve_fixture.h"

namespace nn::serve_test {
namespace {

void expect_error(const api::ServeResponse& r, int status, const std::string& text) {
  EXPECT_EQ(r.status, status) << r.body;
  const json e = body(r);
  ASSERT_TRUE(e.contains("error")) << r.body;
  EXPECT_NE(e["error"].get<std::string>().find(text), std::string::npos) << e["error"];
}

TEST_F(ServeTest, BadRequestsGetTheirStatus) {
  api::ServeOptions o = options();
  o.max_body = 4096;
  o.max_rows = 3;
  api::Service s(o);
  const char* infer = "/v2/models/served/infer";
  expect_error(post(s, "/recommend", R"({"items": ["m1"])"), 400, "malformed JSON");
  expect_error(post(s, "/recommend", ""), 400, "malformed JSON");
  expect_error(post(s, "/recommend", R"({"items": ["m1"], "kk": 2})"), 400,
               "request: unknown field 'kk'; expected items, values, k, exclude");
  expect_error(post(s, "/recommend", R"({"k": 2})"), 400, "items: missing");
  expect_error(post(s, "/recommend", R"({"items": "m1"})"), 400, "items: expected a list");
  expect_error(post(s, "/recommend", R"({"items": [1.5]})"), 400,
               "items[0]: expected an item name");
  expect_error(post(s, "/recommend", R"({"items": ["m1", "m1"]})"), 400,
               "items[1]: item 'm1' is given twice");
  expect_error(post(s, "/recommend", R"({"items": ["m1"], "k": 0})"), 400,
               "k: must be between 1 and 1000");
  expect_error(post(s, "/recommend", R"({"items": ["m1"], "k": -3})"), 400, "k: must be between");
  expect_error(post(s, "/recommend", R"({"items": ["m1"], "k": "5"})"), 400,
               "k: expected an integer");
  expect_error(post(s, "/recommend", R"({"items": ["m1"], "exclude": 1})"), 400,
               "exclude: expected true or false");
  expect_error(post(s, "/recommend", R"({"items": ["m1"], "values": [1, 2]})"), 400,
               "values: expected a list of 1 numbers");
  expect_error(post(s, "/recommend", R"({"items": ["m1"], "values": ["x"]})"), 400,
               "values[0]: expected a number");
  expect_error(post(s, "/recommend", R"([{"items": ["m1"]}, 7])"), 400, "[1]: expected an object");
  expect_error(post(s, "/recommend", R"([{"items": ["m1"]}, {"items": [], "x": 1}])"), 400,
               "[1]: unknown field 'x'");
  expect_error(post(s, "/recommend", "3"), 400, "expected an object");
  expect_error(post(s, "/recommend", std::string(40, '[') + std::string(40, ']')), 400,
               "nested deeper than 16 levels");
  expect_error(post(s, "/recommend", std::string(5000, ' ')), 413, "request body of 5000 bytes");
  expect_error(post(s, "/recommend", R"([{"items":[]},{"items":[]},{"items":[]},{"items":[]}])"),
               413, "4 users; at most 3");
  expect_error(get(s, "/recommend"), 405, "GET /recommend: this endpoint takes POST");
  expect_error(post(s, "/v2/health/ready", ""), 405, "takes GET");
  expect_error(get(s, "/nothing"), 404, "no endpoint /nothing");
  expect_error(get(s, "/v2/models/other"), 404, "no model 'other'; this server has 'served'");
  expect_error(post(s, "/v2/models/other/infer", "{}"), 404, "no model 'other'");
  expect_error(post(s, infer, R"({"inputs": [], "x": 1})"), 400, "request: unknown field 'x'");
  expect_error(post(s, infer, R"({"outputs": []})"), 400, "inputs: missing");
  const std::string in =
      R"({"inputs": [{"name": "Input", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]})";
  EXPECT_EQ(post(s, infer, in).status, 200);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string b = in;
    b.replace(b.find(from), from.size(), to);
    return b;
  };
  expect_error(post(s, infer, with("\"Input\"", "\"In\"")), 400,
               "unknown input \"In\"; the model's input is 'Input'");
  expect_error(post(s, infer, with("FP32", "INT8")), 400, "\"INT8\" is not served; use FP32");
  expect_error(post(s, infer, with("[1, 2]", "[1, 40]")), 400, "40 columns; input 'Input' has 32");
  expect_error(post(s, infer, with("[1, 2]", "[0, 2]")), 400, "expected positive integers");
  expect_error(post(s, infer, with("[1, 2]", "[4, 2]")), 413, "4 rows; at most 3");
  expect_error(post(s, infer, with("[1, 2]}", "[1]}")), 400, "1 numbers; shape [1,2] needs 2");
  expect_error(post(s, infer, with("[1, 2]}", "[1, \"a\"]}")), 400, "data[1]: expected a number");
  expect_error(post(s, infer, with("}]}", ", \"extra\": 1}]}")), 400,
               "inputs[0]: unknown field 'extra'");
  expect_error(post(s, infer, in.substr(0, in.size() - 1) + R"(, "outputs": [{"name": "Nope"}]})"),
               400, "outputs[0].name: no output 'Nope'; outputs are Hidden, Output");
  // None of it disturbed the service.
  EXPECT_EQ(post(s, "/recommend", R"({"items": ["m1"]})").status, 200);
  EXPECT_EQ(s.stats().in_flight, 0u);
}

TEST_F(ServeTest, DrainingAnswers503) {
  api::Service s(options());
  s.drain();
  EXPECT_FALSE(s.ready());
  expect_error(get(s, "/v2/health/ready"), 503, "not ready");
  expect_error(get(s, "/v2/models/served/ready"), 503, "not ready");
  expect_error(post(s, "/recommend", R"({"items": ["m1"]})"), 503, "shutting down");
  EXPECT_EQ(get(s, "/v2/health/live").status, 200);
  s.drain();  // idempotent
}

TEST_F(ServeTest, OptionsTheServiceRefuses) {
  api::ServeOptions o = options();
  o.output_index = "";
  EXPECT_THROW(api::Service{o}, ArgumentError);
  o = options();
  o.max_batch = 0;
  EXPECT_THROW(api::Service{o}, ArgumentError);
  o = options();
  o.network = path("missing.nc");
  EXPECT_THROW(api::Service{o}, Error);
  // An index that names more units than the layer has is not this network's.
  {
    std::ofstream big(path("big.idx"));
    for (int i = 0; i < 40; ++i) big << "x" << i << "\t" << i << "\n";
  }
  o = options();
  o.output_index = path("big.idx");
  try {
    api::Service s(o);
    FAIL() << "a 40-name index for a 32-unit layer was accepted";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("names unit 32 ('x32'), but layer 'Output' has 32 units"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nn::serve_test
