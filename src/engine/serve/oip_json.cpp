// Triton's model configuration and statistics as JSON (serve/oip_json.h). Triton writes its
// 64-bit counters and dims as JSON numbers (not the strings of protobuf's JSON mapping), and its
// clients read them so; so does this.
#include "serve/oip_json.h"

#include <nlohmann/json.hpp>

namespace nn::serve {
namespace {

using json = nlohmann::json;

// "FP32" -> "TYPE_FP32": the configuration's names for the protocol's datatypes.
std::string config_type(const std::string& datatype) {
  return "TYPE_" + (datatype == "BYTES" ? std::string("STRING") : datatype);
}

json duration(const api::StatDuration& d) {
  return {{"count", d.count}, {"ns", d.ns}};
}

}  // namespace

std::string format_config(const api::ModelConfig& c) {
  auto tensors = [](const std::vector<api::TensorInfo>& list, bool input) {
    json out = json::array();
    for (const api::TensorInfo& t : list) {
      json entry = {{"name", t.name}, {"data_type", config_type(t.datatype)}, {"dims", t.shape}};
      if (input) entry["format"] = "FORMAT_NONE";
      out.push_back(std::move(entry));
    }
    return out;
  };
  const json config = {{"name", c.name},
                       {"platform", c.platform},
                       {"backend", c.backend},
                       {"max_batch_size", c.max_batch_size},
                       {"input", tensors(c.inputs, true)},
                       {"output", tensors(c.outputs, false)},
                       {"dynamic_batching",
                        {{"preferred_batch_size", c.preferred_batch_sizes},
                         {"max_queue_delay_microseconds", c.max_queue_delay_us}}}};
  return config.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string format_statistics(const std::vector<api::ModelStatistics>& models) {
  json list = json::array();
  for (const api::ModelStatistics& m : models) {
    json batches = json::array();
    for (const api::BatchStats& b : m.batches)
      batches.push_back({{"batch_size", b.batch_size},
                         {"compute_input", duration(b.compute_input)},
                         {"compute_infer", duration(b.compute_infer)},
                         {"compute_output", duration(b.compute_output)}});
    // No response cache: its hits and misses stay zero.
    list.push_back({{"name", m.name},
                    {"version", m.version},
                    {"last_inference", m.last_inference_ms},
                    {"inference_count", m.inference_count},
                    {"execution_count", m.execution_count},
                    {"inference_stats",
                     {{"success", duration(m.success)},
                      {"fail", duration(m.fail)},
                      {"queue", duration(m.queue)},
                      {"compute_input", duration(m.compute_input)},
                      {"compute_infer", duration(m.compute_infer)},
                      {"compute_output", duration(m.compute_output)},
                      {"cache_hit", duration({})},
                      {"cache_miss", duration({})}}},
                    {"batch_stats", batches}});
  }
  return json{{"model_stats", list}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace nn::serve
