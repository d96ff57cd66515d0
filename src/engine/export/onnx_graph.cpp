// GraphBuilder (export/onnx_graph.h).
#include "export/onnx_graph.h"

#include <algorithm>

namespace nn::onnx_export {

std::string GraphBuilder::name(const std::string& base) {
  std::string n = base;
  for (int i = 1; std::find(used_.begin(), used_.end(), n) != used_.end(); ++i)
    n = base + "_" + std::to_string(i);
  used_.push_back(n);
  return n;
}

std::string GraphBuilder::floats(const std::string& base, const std::vector<int64_t>& dims,
                                 const std::vector<float>& values) {
  onnx::TensorProto* t = graph_.add_initializer();
  t->set_name(name(base));
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  // Little-endian raw bytes, as ONNX stores raw_data on every platform we build for.
  t->set_raw_data(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  parameters_ += values.size();
  return t->name();
}

std::string GraphBuilder::int64s(const std::string& base, const std::vector<int64_t>& values) {
  onnx::TensorProto* t = graph_.add_initializer();
  t->set_name(name(base));
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(int64_t(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
  return t->name();
}

onnx::NodeProto& GraphBuilder::node(const std::string& op, const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs) {
  onnx::NodeProto* n = graph_.add_node();
  n->set_op_type(op);
  n->set_name(outputs.empty() ? op : outputs.front());
  for (const std::string& i : inputs) n->add_input(i);
  for (const std::string& o : outputs) n->add_output(o);
  return *n;
}

std::string GraphBuilder::apply(const std::string& op, const std::vector<std::string>& inputs,
                                const std::string& base) {
  const std::string out = name(base);
  node(op, inputs, {out});
  return out;
}

void GraphBuilder::attribute(onnx::NodeProto& n, const std::string& key, float value) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

void GraphBuilder::attribute(onnx::NodeProto& n, const std::string& key, int64_t value) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void GraphBuilder::attribute(onnx::NodeProto& n, const std::string& key,
                             const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

namespace {

void describe(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims,
              int32_t type) {
  v->set_name(name);
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  onnx::TensorShapeProto* shape = t->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

}  // namespace

void GraphBuilder::input(const std::string& n, const std::vector<int64_t>& dims) {
  used_.push_back(n);
  describe(graph_.add_input(), n, dims, onnx::TensorProto::FLOAT);
}

void GraphBuilder::output(const std::string& n, const std::vector<int64_t>& dims, int32_t type) {
  describe(graph_.add_output(), n, dims, type);
}

}  // namespace nn::onnx_export
