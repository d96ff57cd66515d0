// TensorBoard events through the generated protobuf classes (see tensorboard_event.h).
#include "train/tensorboard_event.h"

#include <climits>

#include "train/tensorboard_records.pb.h"

namespace nn {
namespace {

namespace pb = nn::tensorboard;

constexpr const char* kHParamsPlugin = "hparams";
constexpr int kSessionStatusSuccess = 1, kSessionStatusFailure = 2;
constexpr int kDataTypeFloat = 1;

std::string serialize(const google::protobuf::MessageLite& m) {
  std::string out;
  m.SerializeToString(&out);
  return out;
}

// A summary value of the hparams plugin: TensorBoard finds the plugin's records by the plugin
// name and reads `data` from the metadata; the value itself is an empty float tensor (a shape
// of one dimension of size 0), as TensorBoard's own writer puts there.
std::string hparams_event(double wall_time, const char* tag, const pb::HParamsPluginData& data) {
  pb::Event e;
  e.set_wall_time(wall_time);
  e.set_step(0);
  pb::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  pb::SummaryMetadata::PluginData* plugin = v->mutable_metadata()->mutable_plugin_data();
  plugin->set_plugin_name(kHParamsPlugin);
  plugin->set_content(serialize(data));
  pb::Tensor* t = v->mutable_tensor();
  t->set_dtype(kDataTypeFloat);
  t->mutable_tensor_shape()->add_dim()->set_size(0);
  return serialize(e);
}

}  // namespace

std::string file_version_event(double wall_time) {
  pb::Event e;
  e.set_wall_time(wall_time);
  e.set_file_version("brain.Event:2");
  return serialize(e);
}

std::string scalars_event(double wall_time, int64_t step,
                          const std::vector<TensorBoardScalar>& scalars) {
  pb::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  pb::Summary* s = e.mutable_summary();
  for (const TensorBoardScalar& scalar : scalars) {
    pb::Summary::Value* v = s->add_value();
    v->set_tag(scalar.tag);
    v->set_simple_value(scalar.value);
  }
  return serialize(e);
}

std::string hparams_start_event(double wall_time, double start_time,
                                const std::vector<HyperParameter>& hparams) {
  pb::HParamsPluginData data;
  data.set_version(0);
  pb::SessionStartInfo* start = data.mutable_session_start_info();
  start->set_start_time_secs(start_time);
  for (const HyperParameter& h : hparams) {
    pb::HParam* p = start->add_hparams();
    p->set_key(h.name);
    pb::HParamValue* v = p->mutable_value();
    if (const double* d = std::get_if<double>(&h.value))
      v->set_number_value(*d);
    else if (const std::string* s = std::get_if<std::string>(&h.value))
      v->set_string_value(*s);
    else
      v->set_bool_value(std::get<bool>(h.value));
  }
  return hparams_event(wall_time, "_hparams_/session_start_info", data);
}

std::string hparams_end_event(double wall_time, bool success) {
  pb::HParamsPluginData data;
  data.set_version(0);
  pb::SessionEndInfo* end = data.mutable_session_end_info();
  end->set_status(success ? kSessionStatusSuccess : kSessionStatusFailure);
  end->set_end_time_secs(wall_time);
  return hparams_event(wall_time, "_hparams_/session_end_info", data);
}

std::optional<ParsedEvent> parse_event(std::string_view payload) {
  pb::Event e;
  if (payload.size() > size_t(INT_MAX) || !e.ParseFromArray(payload.data(), int(payload.size())))
    return std::nullopt;
  ParsedEvent out;
  out.wall_time = e.wall_time();
  out.step = e.step();
  if (e.what_case() == pb::Event::kFileVersion) {
    out.kind = ParsedEvent::Kind::FileVersion;
  } else if (e.what_case() == pb::Event::kSummary) {
    bool all_scalars = e.summary().value_size() > 0;
    for (const pb::Summary::Value& v : e.summary().value()) {
      if (v.value_case() != pb::Summary::Value::kSimpleValue)
        all_scalars = false;
      else
        out.scalars.push_back({v.tag(), v.simple_value()});
    }
    if (all_scalars) out.kind = ParsedEvent::Kind::Scalars;
  }
  return out;
}

}  // namespace nn
