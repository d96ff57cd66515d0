// The endpoints' JSON (serve/requests.h). Bodies are parsed with nlohmann::json and checked field
// by field; answers are written by hand, because they are mostly long lists of floats, and each
// float is written with the fewest digits that read back as the same float (std::to_chars).
#include "serve/requests.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "serve/http_error.h"

namespace nn::serve {
namespace {

using json = nlohmann::json;

// Nesting deeper than this is refused before parsing: no valid body comes close, and a megabyte
// of '[' must not cost the server a deep recursion anywhere.
constexpr int kMaxDepth = 16;

void check_depth(const std::string& body) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth)
        throw HttpError(400, "malformed request: JSON nested deeper than " +
                                 std::to_string(kMaxDepth) + " levels");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

json parse_body(const std::string& body) {
  check_depth(body);
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 3: ..." without the tag.
    std::string what = e.what();
    const size_t tag = what.find("] ");
    if (what.rfind("[json.exception", 0) == 0 && tag != std::string::npos)
      what = what.substr(tag + 2);
    throw HttpError(400, "malformed JSON: " + what);
  }
}

std::string join(std::initializer_list<const char*> names) {
  std::string out;
  for (const char* n : names) out += std::string(out.empty() ? "" : ", ") + n;
  return out;
}

// `obj` must be an object whose keys are all in `known`.
void check_object(const json& obj, const std::string& where,
                  std::initializer_list<const char*> known) {
  if (!obj.is_object())
    throw HttpError(400, where + ": expected an object; got " + std::string(obj.type_name()));
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok)
      throw HttpError(400, where + ": unknown field '" + it.key() + "'; expected " + join(known));
  }
}

std::string at(const std::string& where, const std::string& field) {
  return where.empty() ? field : where + "." + field;
}

uint32_t parse_k(const json& v, const std::string& where, const api::ServeOptions& options) {
  if (!v.is_number_integer())
    throw HttpError(400, where + ": expected an integer; got " + std::string(v.type_name()));
  const bool negative = v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0;
  if (negative || v.get<uint64_t>() < 1 || v.get<uint64_t>() > options.max_k)
    throw HttpError(400, where + ": must be between 1 and " + std::to_string(options.max_k) +
                             "; got " + v.dump());
  return uint32_t(v.get<uint64_t>());
}

float parse_value(const json& v, const std::string& where) {
  if (!v.is_number())
    throw HttpError(400, where + ": expected a number; got " + std::string(v.type_name()));
  const double d = v.get<double>();
  const float f = float(d);
  if (!std::isfinite(f)) throw HttpError(400, where + ": not a finite float: " + v.dump());
  return f;
}

// An item name: a string, or an integer standing for its decimal text (MovieLens ids).
std::string item_name(const json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return v.dump();
  throw HttpError(400,
                  where + ": expected an item name (string); got " + std::string(v.type_name()));
}

void append_float(std::string& out, float f) {
  if (!std::isfinite(f)) {
    out += "null";  // JSON has no NaN or infinity
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), f);
  out.append(buf, r.ptr);
}

void append_string(std::string& out, const std::string& s) {
  out += json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

// One user of /recommend into the job's next row.
void parse_user(const json& u, const std::string& where, const Generation& gen,
                const api::ServeOptions& options, Job& job, UserQuery& q) {
  check_object(u, where.empty() ? "request" : where, {"items", "values", "k", "exclude"});
  if (!u.contains("items")) throw HttpError(400, at(where, "items") + ": missing");
  const json& items = u["items"];
  if (!items.is_array())
    throw HttpError(400, at(where, "items") + ": expected a list of item names; got " +
                             std::string(items.type_name()));
  const json* values = nullptr;
  if (u.contains("values")) {
    values = &u["values"];
    if (!values->is_array() || values->size() != items.size())
      throw HttpError(400, at(where, "values") + ": expected a list of " +
                               std::to_string(items.size()) + " numbers, one per item");
  }
  q.k = u.contains("k") ? parse_k(u["k"], at(where, "k"), options) : options.default_k;
  q.k = uint32_t(std::min<uint64_t>(q.k, gen.output_units));
  bool exclude = true;
  if (u.contains("exclude")) {
    if (!u["exclude"].is_boolean())
      throw HttpError(400, at(where, "exclude") + ": expected true or false; got " +
                               std::string(u["exclude"].type_name()));
    exclude = u["exclude"].get<bool>();
  }
  std::vector<std::pair<uint32_t, float>> entries;
  std::vector<uint32_t> excluded(gen.unnamed_outputs);
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string w = at(where, "items") + "[" + std::to_string(i) + "]";
    const std::string name = item_name(items[i], w);
    if (!seen.insert(name).second) throw HttpError(400, w + ": item '" + name + "' is given twice");
    const float value =
        values ? parse_value((*values)[i], at(where, "values") + "[" + std::to_string(i) + "]")
               : 1.0f;
    const auto in = gen.inputs.column.find(name);
    if (in == gen.inputs.column.end())
      q.unknown.push_back(name);
    else
      entries.emplace_back(in->second, value);
    // Left out of the ranking by name, as nn-predict's filter does (through the output index).
    if (exclude) {
      const auto out = gen.outputs.column.find(name);
      if (out != gen.outputs.column.end()) excluded.push_back(out->second);
    }
  }
  // Columns ascending: a sparse layer sums a row's entries in stored order, so the answer does not
  // depend on the order the items were listed in.
  std::sort(entries.begin(), entries.end());
  for (const auto& [col, value] : entries) {
    job.index.push_back(col);
    job.value.push_back(value);
  }
  job.row_ptr.push_back(job.index.size());
  std::sort(excluded.begin(), excluded.end());
  excluded.erase(std::unique(excluded.begin(), excluded.end()), excluded.end());
  job.ex_index.insert(job.ex_index.end(), excluded.begin(), excluded.end());
  job.ex_ptr.push_back(job.ex_index.size());
  ++job.rows;
  job.k = std::max(job.k, q.k);
}

// OIP tensor data: a flat list of numbers or nested lists (row-major), into `out`.
void flatten(const json& data, const std::string& where, std::vector<float>& out, uint64_t limit) {
  for (size_t i = 0; i < data.size(); ++i) {
    const json& v = data[i];
    if (v.is_array()) {
      flatten(v, where, out, limit);  // depth is bounded by check_depth
    } else {
      if (out.size() >= limit) return;  // the count check reports it
      out.push_back(parse_value(v, where + "[" + std::to_string(out.size()) + "]"));
    }
  }
}

uint64_t count_numbers(const json& data) {
  uint64_t n = 0;
  for (const json& v : data) n += v.is_array() ? count_numbers(v) : 1;
  return n;
}

}  // namespace

RecommendQuery parse_recommend(const std::string& body,
                               const std::shared_ptr<const Generation>& gen,
                               const api::ServeOptions& options) {
  const json request = parse_body(body);
  RecommendQuery q;
  q.job = std::make_unique<Job>();
  q.job->kind = Job::Kind::TopK;
  q.job->gen = gen;
  q.job->layer = gen->output_layer;
  if (request.is_array()) {
    q.list = true;
    if (request.size() > options.max_rows)
      throw HttpError(413, "request: " + std::to_string(request.size()) + " users; at most " +
                               std::to_string(options.max_rows) + " in one request");
    for (size_t i = 0; i < request.size(); ++i) {
      q.users.emplace_back();
      parse_user(request[i], "[" + std::to_string(i) + "]", *gen, options, *q.job, q.users.back());
    }
  } else if (request.is_object()) {
    q.users.emplace_back();
    parse_user(request, "", *gen, options, *q.job, q.users.back());
  } else {
    throw HttpError(400, "request: expected an object {\"items\": [...]} or a list of them; got " +
                             std::string(request.type_name()));
  }
  return q;
}

std::string format_recommend(const RecommendQuery& q) {
  const Job& job = *q.job;
  const Generation& gen = *job.gen;
  const std::string version = std::to_string(gen.version);
  std::string out = q.list ? "[" : "";
  for (size_t u = 0; u < q.users.size(); ++u) {
    const UserQuery& user = q.users[u];
    std::string items = "[", scores = "[";
    for (uint32_t i = 0; i < user.k; ++i) {
      const uint32_t col = job.top_index[u * job.k + i];
      if (col == UINT32_MAX) break;  // fewer candidates than k
      if (i) items += ',', scores += ',';
      append_string(items, gen.outputs.name[col]);
      append_float(scores, job.top_score[u * job.k + i]);
    }
    std::string unknown = "[";
    for (size_t i = 0; i < user.unknown.size(); ++i) {
      if (i) unknown += ',';
      append_string(unknown, user.unknown[i]);
    }
    if (u) out += ',';
    out += "{\"items\":" + items + "],\"scores\":" + scores + "],\"unknown\":" + unknown +
           "],\"model_version\":\"" + version + "\"}";
  }
  if (q.list) out += "]";
  return out;
}

bool BinaryOutputs::wants(const std::string& output) const {
  return all || std::find(names.begin(), names.end(), output) != names.end();
}

namespace {

// A tensor's "parameters": an object whose `flag` (if there) is a boolean; its value.
bool flag_of(const json& owner, const std::string& where, const char* flag) {
  if (!owner.contains("parameters")) return false;
  const json& p = owner["parameters"];
  if (!p.is_object()) throw HttpError(400, where + ".parameters: expected an object");
  if (!p.contains(flag)) return false;
  if (!p[flag].is_boolean())
    throw HttpError(400, where + ".parameters." + flag + ": expected true or false");
  return p[flag].get<bool>();
}

}  // namespace

api::InferRequest parse_infer(const std::string& body, const std::shared_ptr<const Generation>& gen,
                              size_t json_length, BinaryOutputs* binary) {
  if (json_length != std::string::npos && json_length > body.size())
    throw HttpError(400, "Inference-Header-Content-Length: " + std::to_string(json_length) +
                             " is more than the body's " + std::to_string(body.size()) + " bytes");
  const bool split = json_length != std::string::npos;
  const json request = parse_body(split ? body.substr(0, json_length) : body);
  const std::string_view rest =
      split ? std::string_view(body).substr(json_length) : std::string_view();
  check_object(request, "request", {"id", "parameters", "inputs", "outputs"});
  api::InferRequest r;
  if (request.contains("id")) {
    if (!request["id"].is_string()) throw HttpError(400, "id: expected a string");
    r.id = request["id"].get<std::string>();
  }
  if (request.contains("parameters") && !request["parameters"].is_object())
    throw HttpError(400, "parameters: expected an object");
  const bool all_binary = flag_of(request, "request", "binary_data_output");
  if (!request.contains("inputs")) throw HttpError(400, "inputs: missing");
  const json& inputs = request["inputs"];
  if (!inputs.is_array() || inputs.size() != 1)
    throw HttpError(400, "inputs: expected a list of one tensor (the model has one input, '" +
                             gen->input_layer + "')");
  const json& in = inputs[0];
  check_object(in, "inputs[0]", {"name", "shape", "datatype", "data", "parameters"});
  // With "binary_data_size" the data follows the JSON instead of being in it.
  std::optional<uint64_t> binary_size;
  if (in.contains("parameters")) {
    const json& p = in["parameters"];
    if (!p.is_object()) throw HttpError(400, "inputs[0].parameters: expected an object");
    if (p.contains("binary_data_size")) {
      if (!p["binary_data_size"].is_number_unsigned())
        throw HttpError(400, "inputs[0].parameters.binary_data_size: expected a byte count");
      binary_size = p["binary_data_size"].get<uint64_t>();
    }
  }
  for (const char* f : {"name", "shape", "datatype"})
    if (!in.contains(f)) throw HttpError(400, std::string("inputs[0].") + f + ": missing");
  if (!binary_size && !in.contains("data")) throw HttpError(400, "inputs[0].data: missing");
  if (binary_size && in.contains("data"))
    throw HttpError(400, "inputs[0]: both \"data\" and parameters.binary_data_size; give one");
  // A name or datatype that is not a string cannot be the model's: make_infer says so, quoting
  // it as JSON.
  api::Tensor t;
  t.name = in["name"].is_string() ? in["name"].get<std::string>() : in["name"].dump();
  t.datatype =
      in["datatype"].is_string() ? in["datatype"].get<std::string>() : in["datatype"].dump();
  const json& shape = in["shape"];
  if (!shape.is_array())
    throw HttpError(400, "inputs[0].shape: expected [columns] or [rows, columns]");
  for (const json& d : shape) {
    if (!d.is_number_integer())
      throw HttpError(400, "inputs[0].shape: expected positive integers; got " + shape.dump());
    // Beyond int64 is as wrong as zero: make_infer refuses both with this message.
    t.shape.push_back(
        d.is_number_unsigned() && d.get<uint64_t>() > uint64_t(INT64_MAX) ? 0 : d.get<int64_t>());
  }
  if (binary_size) {
    if (t.datatype != "FP32")
      throw HttpError(400, "inputs[0].datatype: binary data is read as FP32; got " + t.datatype);
    if (*binary_size % sizeof(float) != 0)
      throw HttpError(400, "inputs[0].parameters.binary_data_size: " +
                               std::to_string(*binary_size) + " is not a multiple of 4 (FP32)");
    if (*binary_size != rest.size())
      throw HttpError(400,
                      "inputs[0].parameters.binary_data_size: " + std::to_string(*binary_size) +
                          " bytes, but " + std::to_string(rest.size()) +
                          " follow the JSON (Inference-Header-Content-Length)");
    t.data.resize(*binary_size / sizeof(float));
    if (!t.data.empty()) std::memcpy(t.data.data(), rest.data(), *binary_size);
  } else {
    if (!rest.empty())
      throw HttpError(400, std::to_string(rest.size()) +
                               " bytes follow the JSON, but no input has "
                               "parameters.binary_data_size");
    if (!in["data"].is_array()) throw HttpError(400, "inputs[0].data: expected a list of numbers");
    // The body is at most max_body bytes, so its numbers are bounded too.
    t.data.reserve(count_numbers(in["data"]));
    flatten(in["data"], "inputs[0].data", t.data, UINT64_MAX);
  }
  r.inputs.push_back(std::move(t));
  BinaryOutputs wanted;
  wanted.all = all_binary;
  if (request.contains("outputs")) {
    const json& outputs = request["outputs"];
    if (!outputs.is_array() || outputs.empty())
      throw HttpError(400, "outputs: expected a list of {\"name\": layer}");
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string w = "outputs[" + std::to_string(i) + "]";
      check_object(outputs[i], w, {"name", "parameters"});
      if (!outputs[i].contains("name") || !outputs[i]["name"].is_string())
        throw HttpError(400, w + ".name: expected a layer name");
      r.outputs.push_back(outputs[i]["name"].get<std::string>());
      if (flag_of(outputs[i], w, "binary_data")) wanted.names.push_back(r.outputs.back());
    }
  }
  if (binary) *binary = std::move(wanted);
  return r;
}

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace

InferQuery make_infer(api::InferRequest& r, const std::shared_ptr<const Generation>& gen,
                      const api::ServeOptions& options) {
  if (r.inputs.size() != 1)
    throw HttpError(400, "inputs: expected a list of one tensor (the model has one input, '" +
                             gen->input_layer + "')");
  api::Tensor& in = r.inputs[0];
  if (in.name != gen->input_layer)
    throw HttpError(400, "inputs[0].name: unknown input " + json(in.name).dump() +
                             "; the model's input is '" + gen->input_layer + "'");
  if (in.datatype != "FP32")
    throw HttpError(400,
                    "inputs[0].datatype: " + json(in.datatype).dump() + " is not served; use FP32");
  if (in.shape.empty() || in.shape.size() > 2)
    throw HttpError(400, "inputs[0].shape: expected [columns] or [rows, columns]");
  for (int64_t d : in.shape)
    if (d < 1)
      throw HttpError(400,
                      "inputs[0].shape: expected positive integers; got " + shape_text(in.shape));
  const uint64_t rows = in.shape.size() == 2 ? uint64_t(in.shape[0]) : 1;
  const uint64_t cols = uint64_t(in.shape.back());
  if (cols > gen->input_units)
    throw HttpError(400, "inputs[0].shape: " + std::to_string(cols) + " columns; input '" +
                             gen->input_layer + "' has " + std::to_string(gen->input_units));
  if (rows > options.max_rows)
    throw HttpError(413, "inputs[0].shape: " + std::to_string(rows) + " rows; at most " +
                             std::to_string(options.max_rows) + " in one request");
  if (in.data.size() != rows * cols)
    throw HttpError(400, "inputs[0].data: " + std::to_string(in.data.size()) + " numbers; shape " +
                             shape_text(in.shape) + " needs " + std::to_string(rows * cols));
  // JSON has no NaN or infinity; a binary tensor can, and must not reach the model either.
  for (size_t i = 0; i < in.data.size(); ++i)
    if (!std::isfinite(in.data[i]))
      throw HttpError(400, "inputs[0].data[" + std::to_string(i) + "]: not a finite float");

  std::vector<std::string> layers;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const std::string& name = r.outputs[i];
    std::string known;
    bool found = false;
    for (const api::LayerInfo& l : gen->model->layers()) {
      if (l.kind == "Input") continue;
      known += (known.empty() ? "" : ", ") + l.name;
      found = found || l.name == name;
    }
    if (!found)
      throw HttpError(400, "outputs[" + std::to_string(i) + "].name: no output '" + name +
                               "'; outputs are " + known);
    layers.push_back(name);
  }
  if (layers.empty()) layers = gen->model->output_layers();
  InferQuery q;
  q.id = r.id;
  for (size_t i = 0; i < layers.size(); ++i) {
    auto job = std::make_unique<Job>();
    job->kind = Job::Kind::Outputs;
    job->gen = gen;
    job->rows = rows;
    job->cols = cols;
    // The last job takes the request's data; the others copy it.
    job->dense = i + 1 < layers.size() ? in.data : std::move(in.data);
    job->layer = layers[i];
    q.jobs.push_back(std::move(job));
  }
  return q;
}

api::InferResponse infer_response(InferQuery& q, const std::string& model_name) {
  api::InferResponse r;
  r.model_name = model_name;
  r.model_version = std::to_string(q.jobs.front()->gen->version);
  r.id = q.id;
  for (auto& job : q.jobs) {
    api::Tensor t;
    t.name = job->layer;
    t.shape = {int64_t(job->rows), int64_t(job->units)};
    t.data = std::move(job->outputs);
    r.outputs.push_back(std::move(t));
  }
  return r;
}

std::string format_infer(const api::InferResponse& r, const BinaryOutputs& binary,
                         size_t* json_length) {
  std::string out = "{\"model_name\":";
  append_string(out, r.model_name);
  out += ",\"model_version\":";
  append_string(out, r.model_version);
  if (!r.id.empty()) {
    out += ",\"id\":";
    append_string(out, r.id);
  }
  out += ",\"outputs\":[";
  std::vector<const api::Tensor*> raw;  // the outputs that follow the JSON, in order
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const api::Tensor& t = r.outputs[i];
    if (i) out += ',';
    out += "{\"name\":";
    append_string(out, t.name);
    out += ",\"datatype\":\"FP32\",\"shape\":" + shape_text(t.shape);
    if (binary.wants(t.name)) {
      out +=
          ",\"parameters\":{\"binary_data_size\":" + std::to_string(t.data.size() * sizeof(float)) +
          "}}";
      raw.push_back(&t);
      continue;
    }
    out += ",\"data\":[";
    for (size_t v = 0; v < t.data.size(); ++v) {
      if (v) out += ',';
      append_float(out, t.data[v]);
    }
    out += "]}";
  }
  out += "]}";
  if (json_length) *json_length = raw.empty() ? std::string::npos : out.size();
  for (const api::Tensor* t : raw)
    out.append(reinterpret_cast<const char*>(t->data.data()), t->data.size() * sizeof(float));
  return out;
}

api::ServerMetadata server_metadata() {
  return {
      "nn-serve", NN_SERVE_VERSION, {"model_configuration", "statistics", "binary_tensor_data"}};
}

std::string format_server_metadata(const api::ServerMetadata& m) {
  const json meta = {{"name", m.name}, {"version", m.version}, {"extensions", m.extensions}};
  return meta.dump(-1, ' ', false, json::error_handler_t::replace);
}

api::ModelMetadata model_metadata(const Generation& gen, const std::string& model_name) {
  api::ModelMetadata m;
  m.name = model_name;
  m.platform = "nn";
  m.versions = {std::to_string(gen.version)};
  m.inputs.push_back({gen.input_layer, "FP32", {-1, int64_t(gen.input_units)}});
  for (const std::string& name : gen.model->output_layers())
    m.outputs.push_back({name, "FP32", {-1, int64_t(gen.model->layer(name).units)}});
  return m;
}

std::string format_metadata(const api::ModelMetadata& m) {
  auto tensors = [](const std::vector<api::TensorInfo>& list) {
    json out = json::array();
    for (const api::TensorInfo& t : list)
      out.push_back({{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}});
    return out;
  };
  const json meta = {{"name", m.name},
                     {"versions", m.versions},
                     {"platform", m.platform},
                     {"inputs", tensors(m.inputs)},
                     {"outputs", tensors(m.outputs)}};
  return meta.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string error_body(const std::string& message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace nn::serve
