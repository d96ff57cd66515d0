// A thin builder over ONNX's GraphProto (Debian's libonnx-dev): nodes with attributes,
// float initializers, unique tensor names. The exporter (export/onnx_export.cpp) says what to
// build; this file knows how ONNX spells it.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace nn::onnx_export {

class GraphBuilder {
 public:
  explicit GraphBuilder(onnx::GraphProto& graph) : graph_(graph) {}

  // A new tensor name from `base` ("Hidden_matmul", "Hidden_matmul_1", ...).
  std::string name(const std::string& base);
  // A float initializer of shape `dims`; returns its name.
  std::string floats(const std::string& base, const std::vector<int64_t>& dims,
                     const std::vector<float>& values);
  // An int64 initializer (shapes for Reshape, k for TopK).
  std::string int64s(const std::string& base, const std::vector<int64_t>& values);
  // Appends a node; returns it for attributes. Its output names are given.
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs);
  // `op`(inputs) into a new tensor named from `base`; returns the tensor's name.
  std::string apply(const std::string& op, const std::vector<std::string>& inputs,
                    const std::string& base);
  static void attribute(onnx::NodeProto& n, const std::string& key, float value);
  static void attribute(onnx::NodeProto& n, const std::string& key, int64_t value);
  static void attribute(onnx::NodeProto& n, const std::string& key,
                        const std::vector<int64_t>& values);
  // A graph input or output: float [batch, dims...] (batch symbolic).
  void input(const std::string& name, const std::vector<int64_t>& dims);
  void output(const std::string& name, const std::vector<int64_t>& dims,
              int32_t type = onnx::TensorProto::FLOAT);

  uint64_t parameters() const { return parameters_; }

 private:
  onnx::GraphProto& graph_;
  std::vector<std::string> used_;
  uint64_t parameters_ = 0;
};

}  // namespace nn::onnx_export
