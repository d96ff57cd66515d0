// Triton's binary tensor extension over HTTP (POST .../infer with Inference-Header-Content-Length):
// raw FP32 inputs after the JSON, outputs asked for as binary returned after the answer's JSON,
// each equal bit for bit to the JSON request's; and the malformed forms refused with 400 and a
// message that names what is wrong.
#include <cstring>

#include "serve_fixture.h"

namespace nn::serve_test {
namespace {

std::vector<float> input_rows(uint64_t n, uint64_t cols) {
  std::vector<float> v;
  for (uint64_t i = 0; i < n * cols; ++i) v.push_back(float((i * 5 + 1) % 13) / 13);
  return v;
}

std::string raw(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// A request whose input is binary (`binary_in`) or JSON, asking for binary outputs or not.
api::ServeRequest request(const std::vector<float>& data, int64_t rows, bool binary_in,
                          json outputs = nullptr, json parameters = nullptr) {
  json in = {{"name", "Input"}, {"datatype", "FP32"}, {"shape", {rows, 32}}};
  if (binary_in)
    in["parameters"] = {{"binary_data_size", data.size() * sizeof(float)}};
  else
    in["data"] = data;
  json req = {{"inputs", {in}}};
  if (!outputs.is_null()) req["outputs"] = outputs;
  if (!parameters.is_null()) req["parameters"] = parameters;
  const std::string head = req.dump();
  api::ServeRequest r{"POST", "/v2/models/served/infer", head};
  if (binary_in) {
    r.body += raw(data);
    r.inference_header_length = std::to_string(head.size());
  }
  return r;
}

TEST_F(ServeTest, BinaryTensorsAnswerWhatJsonAnswers) {
  api::Service s(options());
  const std::vector<float> data = input_rows(3, 32);
  const api::ServeResponse plain = s.handle(request(data, 3, false));
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_TRUE(plain.inference_header_length.empty());
  const json want = body(plain)["outputs"][0];

  // Binary in, JSON out.
  const api::ServeResponse in_only = s.handle(request(data, 3, true));
  ASSERT_EQ(in_only.status, 200) << in_only.body;
  EXPECT_EQ(body(in_only)["outputs"][0], want);

  // Binary in and out (asked for on the output, then for every output).
  for (const auto& [outputs, parameters] :
       {std::pair<json, json>{
            json::array({{{"name", "Output"}, {"parameters", {{"binary_data", true}}}}}), nullptr},
        std::pair<json, json>{nullptr, {{"binary_data_output", true}}}}) {
    const api::ServeResponse r = s.handle(request(data, 3, true, outputs, parameters));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.content_type, "application/octet-stream");
    ASSERT_FALSE(r.inference_header_length.empty());
    const size_t n = std::stoul(r.inference_header_length);
    ASSERT_LE(n, r.body.size());
    const json head = json::parse(r.body.substr(0, n));
    const json& out = head["outputs"][0];
    EXPECT_EQ(out["name"], "Output");
    EXPECT_EQ(out["shape"], want["shape"]);
    EXPECT_FALSE(out.contains("data"));
    const size_t bytes = out["parameters"]["binary_data_size"].get<size_t>();
    ASSERT_EQ(bytes, want["data"].size() * sizeof(float));
    ASSERT_EQ(r.body.size(), n + bytes);
    for (size_t i = 0; i < want["data"].size(); ++i) {
      float got;
      std::memcpy(&got, r.body.data() + n + i * sizeof(float), sizeof got);
      const float expected = want["data"][i].get<float>();
      EXPECT_EQ(std::memcmp(&got, &expected, sizeof got), 0) << i;
    }
  }
  // JSON in, one output of two binary: only that one follows the JSON.
  const api::ServeResponse mixed = s.handle(
      request(data, 3, false,
              json::array({{{"name", "Hidden"}},
                           {{"name", "Output"}, {"parameters", {{"binary_data", true}}}}})));
  ASSERT_EQ(mixed.status, 200) << mixed.body;
  const size_t n = std::stoul(mixed.inference_header_length);
  const json head = json::parse(mixed.body.substr(0, n));
  EXPECT_TRUE(head["outputs"][0].contains("data"));
  EXPECT_FALSE(head["outputs"][1].contains("data"));
  EXPECT_EQ(mixed.body.size(), n + want["data"].size() * sizeof(float));
}

TEST_F(ServeTest, MalformedBinaryRequestsAreRefusedByName) {
  api::Service s(options());
  const std::vector<float> data = input_rows(2, 32);
  auto refused = [&](api::ServeRequest r, const std::string& expected) {
    const api::ServeResponse a = s.handle(r);
    EXPECT_EQ(a.status, 400) << a.body;
    EXPECT_NE(a.body.find(expected), std::string::npos) << a.body;
  };
  api::ServeRequest r = request(data, 2, true);
  r.body.pop_back();  // one byte short
  refused(r, "binary_data_size: 256 bytes, but 255 follow the JSON");
  r = request(data, 2, true);
  r.inference_header_length = "12x";
  refused(r, "Inference-Header-Content-Length: expected a byte count");
  r = request(data, 2, true);
  r.inference_header_length = std::to_string(r.body.size() + 1);
  refused(r, "is more than the body's");
  r = request(data, 2, true);
  r.inference_header_length.clear();  // the raw bytes then make the JSON malformed
  refused(r, "malformed JSON");
  r = request(data, 2, false);
  r.inference_header_length = std::to_string(r.body.size());
  r.body += "abcd";
  refused(r, "4 bytes follow the JSON, but no input has parameters.binary_data_size");
}

}  // namespace
}  // namespace nn::serve_test
