// export_onnx (include/nn/export.h): a network file's layers as an ONNX graph. Every layer's
// result is a flat tensor [batch, units] named after the layer, exactly the engine's activations;
// convolutional and pooling layers reshape their sources to [batch, channels, (z,) (y,) x] (the
// engine stores images channel-major, x fastest: ONNX's NC[D]HW), compute, and flatten back.
// Padding follows DSSTNE's rule (config/layer_shapes.h) with the end padding ONNX needs for the
// engine's output extents written out explicitly.
#include <onnx/checker.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "config/layer_shapes.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/stop_request.h"
#include "export/onnx_graph.h"
#include "io/network_file.h"
#include "layers/batch_norm.h"
#include "layers/conv_geometry.h"
#include "nn/export.h"

namespace nn::api {
namespace {

using onnx_export::GraphBuilder;

constexpr int kOpset = 13;
constexpr int kIrVersion = 8;  // ONNX 1.10 - 1.12; read by every onnxruntime since 1.10

[[noreturn]] void refuse(const LayerSpec& l, const std::string& why) {
  throw ConfigError("layer '" + l.name + "': " + why + "; it cannot be exported to ONNX");
}

class Exporter {
 public:
  Exporter(const NetworkFile& file, GraphBuilder& g) : file_(file), g_(g) {}

  // Builds the graph; returns the output layers' flat tensors.
  std::vector<const LayerSpec*> build() {
    std::vector<const LayerSpec*> outputs;
    for (const LayerSpec& l : file_.spec.layers)
      if (l.kind == LayerKind::Output) outputs.push_back(&l);
    if (outputs.empty())
      throw ArgumentError(file_.spec.source + ": the network has no output layer");
    for (const LayerSpec& l : file_.spec.layers)
      if (l.kind == LayerKind::Input) {
        g_.input(l.name, {int64_t(l.units())});
        flat_[l.name] = l.normalize == RowNormalization::L2 ? l2_normalized(l) : l.name;
      }
    for (const LayerSpec* o : outputs) visit(*o);
    return outputs;
  }
  const std::string& flat(const std::string& layer) const { return flat_.at(layer); }

 private:
  const LayerSpec& spec(const std::string& name) const {
    const LayerSpec* l = file_.spec.find_layer(name);
    if (!l) throw DataError(file_.spec.source + ": no layer named '" + name + "'");
    return *l;
  }

  // Emits `l` after everything it reads (depth first; the spec forbids cycles).
  void visit(const LayerSpec& l) {
    if (flat_.count(l.name)) return;
    if (!visiting_.insert(l.name).second) refuse(l, "it reads itself through its sources");
    for (const std::string& s : l.sources) visit(spec(s));
    for (const std::string& s : l.skips) visit(spec(s));
    if (l.activation == Activation::MaxOut && l.type != LayerType::Pooling)
      refuse(l, "MaxOut activation");
    switch (l.type) {
      case LayerType::FullyConnected:
        fully_connected(l);
        break;
      case LayerType::Convolutional:
        convolutional(l);
        break;
      case LayerType::Pooling:
        pooling(l);
        break;
      case LayerType::Variational:
        fully_connected(l);
        break;
    }
  }

  // The weights of `l`'s connection from `source`: [n_in][n_out] row-major.
  std::vector<float> weights(const LayerSpec& l, const std::string& source, uint64_t n_in,
                             uint64_t n_out, const WeightArrays** bias) const {
    const WeightArrays* w = nullptr;
    for (const WeightArrays& wa : file_.weights)
      if (wa.output_layer == l.name && wa.input_layer == source) w = &wa;
    if (!w)
      throw DataError(file_.spec.source + ": no weights for '" + source + "' -> '" + l.name + "'");
    *bias = w;
    if (!w->shared) {
      if (w->weights.size() != n_in * n_out)
        refuse(l, "its weights from '" + source + "' are absent");
      return w->weights;
    }
    const WeightArrays* owner = nullptr;
    for (const WeightArrays& wa : file_.weights)
      if (wa.input_layer == w->source_input_layer && wa.output_layer == w->source_output_layer &&
          !wa.shared)
        owner = &wa;
    if (!owner || owner->weights.size() != n_in * n_out)
      refuse(l, "the weights it shares with '" + w->source_input_layer + "' -> '" +
                    w->source_output_layer + "' are absent or of another size");
    if (!w->transposed) return owner->weights;
    // The owner's matrix is [n_out][n_in] here: used transposed.
    std::vector<float> t(n_in * n_out);
    for (uint64_t i = 0; i < n_in; ++i)
      for (uint64_t o = 0; o < n_out; ++o) t[i * n_out + o] = owner->weights[o * n_in + i];
    return t;
  }

  // The batch normalisation of `l` over axis 1 of `x` (units, or channels of an image).
  std::string batch_norm(const LayerSpec& l, const std::string& x, uint64_t channels) {
    const LayerArrays* a = nullptr;
    for (const LayerArrays& la : file_.layers)
      if (la.layer == l.name) a = &la;
    if (!a || a->bn_scale.size() != channels || a->bn_bias.size() != channels ||
        a->bn_running_mean.size() != channels || a->bn_running_variance.size() != channels)
      refuse(l, "its batch normalisation arrays are absent or of another size");
    const std::vector<int64_t> dims{int64_t(channels)};
    const std::string out = g_.name(l.name + "_bn");
    onnx::NodeProto& n = g_.node("BatchNormalization",
                                 {x, g_.floats(l.name + "_bn_scale", dims, a->bn_scale),
                                  g_.floats(l.name + "_bn_bias", dims, a->bn_bias),
                                  g_.floats(l.name + "_bn_mean", dims, a->bn_running_mean),
                                  g_.floats(l.name + "_bn_var", dims, a->bn_running_variance)},
                                 {out});
    GraphBuilder::attribute(n, "epsilon", BatchNorm::kEpsilon);
    return out;
  }

  // The activation of `l` on `x`; SoftMax runs over a row's units, so an image is flattened
  // first (*flattened says so).
  std::string activate(const LayerSpec& l, const std::string& x, bool image, bool* flattened) {
    *flattened = false;
    const std::string base = l.name + "_act";
    auto clip = [&](float lo, float hi) {
      return g_.apply(
          "Clip", {x, g_.floats(l.name + "_min", {}, {lo}), g_.floats(l.name + "_max", {}, {hi})},
          base);
    };
    switch (l.activation) {
      case Activation::Sigmoid:
        return g_.apply("Sigmoid", {x}, base);
      case Activation::Tanh:
        return g_.apply("Tanh", {x}, base);
      case Activation::RectifiedLinear:
        return g_.apply("Relu", {x}, base);
      case Activation::Linear:
        return x;
      case Activation::LeakyRectifiedLinear:
      case Activation::ParametricRectifiedLinear: {
        const std::string out = g_.name(base);
        GraphBuilder::attribute(g_.node("LeakyRelu", {x}, {out}), "alpha", l.relu_slope);
        return out;
      }
      case Activation::ExponentialLinear: {
        const std::string out = g_.name(base);
        GraphBuilder::attribute(g_.node("Elu", {x}, {out}), "alpha", l.elu_alpha);
        return out;
      }
      case Activation::ScaledExponentialLinear: {
        const std::string out = g_.name(base);
        onnx::NodeProto& n = g_.node("Selu", {x}, {out});
        GraphBuilder::attribute(n, "alpha", l.elu_alpha);
        GraphBuilder::attribute(n, "gamma", l.selu_lambda);
        return out;
      }
      case Activation::SoftPlus:
        return g_.apply("Softplus", {x}, base);
      case Activation::SoftSign:
        return g_.apply("Softsign", {x}, base);
      case Activation::ReluMax:
        return clip(0.0f, l.activation_max);
      case Activation::LinearMax:
        return clip(-l.activation_max, l.activation_max);
      case Activation::SoftMax: {
        std::string in = x;
        if (image) {
          in = flatten(l, x);
          *flattened = true;
        }
        const std::string out = g_.name(base);
        GraphBuilder::attribute(g_.node("Softmax", {in}, {out}), "axis", int64_t(1));
        return out;
      }
      case Activation::MaxOut:
        break;
    }
    refuse(l, "activation " + std::string(to_string(l.activation)));
  }

  std::string flatten(const LayerSpec& l, const std::string& x) {
    const std::string out = g_.name(l.name + "_flat");
    GraphBuilder::attribute(g_.node("Flatten", {x}, {out}), "axis", int64_t(1));
    return out;
  }

  // [batch, channels, (z,) (y,) x] of a layer read with `axes` spatial axes.
  static std::vector<int64_t> image_shape(const std::array<uint32_t, 3>& extent, uint32_t channels,
                                          uint32_t axes) {
    std::vector<int64_t> dims{-1, int64_t(channels)};
    for (uint32_t d = axes; d-- > 0;) dims.push_back(int64_t(extent[d]));
    return dims;
  }
  std::string reshape(const std::string& x, const std::vector<int64_t>& dims,
                      const std::string& base) {
    return g_.apply("Reshape", {x, g_.int64s(base + "_shape", dims)}, base);
  }

  // ONNX's kernel_shape, strides and pads (begin..., end...) for geometry `c`, spatial axes
  // outermost first; the end padding gives ONNX the engine's output extent.
  static void window(onnx::NodeProto& n, const ConvGeometry& c) {
    std::vector<int64_t> kernel, strides, begin, end;
    for (uint32_t d = c.dims; d-- > 0;) {
      kernel.push_back(c.kernel[d]);
      strides.push_back(c.stride[d]);
      begin.push_back(c.pad[d]);
      const int64_t e = (int64_t(c.out[d]) - 1) * c.stride[d] + c.kernel[d] - c.in[d] - c.pad[d];
      end.push_back(std::max<int64_t>(0, e));
    }
    begin.insert(begin.end(), end.begin(), end.end());
    GraphBuilder::attribute(n, "kernel_shape", kernel);
    GraphBuilder::attribute(n, "strides", strides);
    GraphBuilder::attribute(n, "pads", begin);
  }

  // The engine's L2 row normalisation of an input layer (data/batch.h): each row divided by its
  // Euclidean norm, rows of zeros left as they are. Built from operators of every opset (the row
  // sums as a product with a column of ones) rather than ReduceL2, whose axes moved between
  // opsets.
  std::string l2_normalized(const LayerSpec& l) {
    const int64_t n = int64_t(l.units());
    const std::string squares = g_.apply("Mul", {l.name, l.name}, l.name + "_sq");
    const std::string sums = g_.apply(
        "MatMul", {squares, g_.floats(l.name + "_ones", {n, 1}, std::vector<float>(size_t(n), 1))},
        l.name + "_sumsq");
    const std::string norms = g_.apply("Sqrt", {sums}, l.name + "_norm");
    const std::string safe =
        g_.apply("Max", {norms, g_.floats(l.name + "_tiny", {1}, {1e-30f})}, l.name + "_norm");
    return g_.apply("Div", {l.name, safe}, l.name + "_l2");
  }

  // Fully connected layers, and Variational ones as they predict: their output is the mean, the
  // first N of their 2N columns ([mean | log-variance], layers/variational_layer.h), so only
  // those columns of the weights and bias are exported, with no activation.
  void fully_connected(const LayerSpec& l) {
    const bool variational = l.type == LayerType::Variational;
    const uint64_t n_out = l.units();
    const uint64_t width = variational ? 2 * n_out : n_out;
    std::string z;
    for (const std::string& s : l.sources) {
      const uint64_t n_in = spec(s).units();
      const WeightArrays* wa = nullptr;
      std::vector<float> w = weights(l, s, n_in, width, &wa);
      if (wa->bias.size() != width) refuse(l, "its bias from '" + s + "' is absent");
      std::vector<float> bias = wa->bias;
      if (variational) {
        for (uint64_t i = 0; i < n_in; ++i)
          std::copy_n(w.begin() + i * width, n_out, w.begin() + i * n_out);
        w.resize(n_in * n_out);
        bias.resize(n_out);
      }
      const std::string prod =
          g_.apply("MatMul",
                   {flat_.at(s), g_.floats(l.name + "_W_" + s, {int64_t(n_in), int64_t(n_out)}, w)},
                   l.name + "_matmul");
      const std::string sum = g_.apply(
          "Add", {prod, g_.floats(l.name + "_b_" + s, {int64_t(n_out)}, bias)}, l.name + "_z");
      z = z.empty() ? sum : g_.apply("Add", {z, sum}, l.name + "_z");
    }
    if (z.empty()) refuse(l, "it has no source");
    if (variational) {
      flat_[l.name] = z;
      return;
    }
    for (const std::string& s : l.skips) z = g_.apply("Add", {z, flat_.at(s)}, l.name + "_skip");
    if (l.batch_normalization) z = batch_norm(l, z, n_out);
    bool flattened = false;
    flat_[l.name] = activate(l, z, false, &flattened);
  }

  void convolutional(const LayerSpec& l) {
    std::string z;
    ConvGeometry out_geometry;
    for (const std::string& s : l.sources) {
      const ConvGeometry c = layer_geometry(l, spec(s));
      out_geometry = c;
      const std::string x4 =
          reshape(flat_.at(s), image_shape(c.in, c.in_channels, c.dims), l.name + "_in_" + s);
      std::vector<int64_t> wdims{int64_t(c.out_channels), int64_t(c.in_channels)};
      uint64_t volume = 1;
      for (uint32_t d = c.dims; d-- > 0;) {
        wdims.push_back(c.kernel[d]);
        volume *= c.kernel[d];
      }
      const WeightArrays* wa = nullptr;
      // Stored as the engine's filter bank: [out channels][in channels][(z)][(y)][x].
      const std::vector<float> w =
          weights(l, s, uint64_t(c.in_channels) * volume, c.out_channels, &wa);
      if (wa->bias.size() != c.out_channels) refuse(l, "its bias from '" + s + "' is absent");
      const std::string out = g_.name(l.name + "_conv");
      onnx::NodeProto& n =
          g_.node("Conv",
                  {x4, g_.floats(l.name + "_W_" + s, wdims, w),
                   g_.floats(l.name + "_b_" + s, {int64_t(c.out_channels)}, wa->bias)},
                  {out});
      window(n, c);
      z = z.empty() ? out : g_.apply("Add", {z, out}, l.name + "_z");
    }
    if (z.empty()) refuse(l, "it has no source");
    const ConvGeometry& c = out_geometry;
    for (const std::string& s : l.skips)
      z = g_.apply("Add",
                   {z, reshape(flat_.at(s), image_shape(c.out, c.out_channels, c.dims),
                               l.name + "_skip_" + s)},
                   l.name + "_skip");
    if (l.batch_normalization) z = batch_norm(l, z, c.out_channels);
    bool flattened = false;
    const std::string a = activate(l, z, true, &flattened);
    flat_[l.name] = flattened ? a : flatten(l, a);
  }

  void pooling(const LayerSpec& l) {
    const char* op = l.pooling == PoolingFunction::Max       ? "MaxPool"
                     : l.pooling == PoolingFunction::Average ? "AveragePool"
                                                             : nullptr;
    if (!op) refuse(l, "pooling function " + std::string(to_string(l.pooling)));
    if (l.sources.size() != 1) refuse(l, "pooling over several sources");
    if (!l.skips.empty()) refuse(l, "skips into a pooling layer");
    const ConvGeometry c = layer_geometry(l, spec(l.sources.front()));
    const std::string x4 = reshape(flat_.at(l.sources.front()),
                                   image_shape(c.in, c.in_channels, c.dims), l.name + "_in");
    const std::string out = g_.name(l.name + "_pool");
    window(g_.node(op, {x4}, {out}), c);  // AveragePool: padding not counted, as the engine
    flat_[l.name] = flatten(l, out);
  }

  const NetworkFile& file_;
  GraphBuilder& g_;
  std::map<std::string, std::string> flat_;
  std::set<std::string> visiting_;
};

}  // namespace

ExportReport export_onnx(const ExportJob& job, const LogSink& log) {
  const NetworkFile file = read_network_file(job.network);
  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("nn-export");
  model.set_doc_string("exported from " + job.network);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name(file.spec.name.empty() ? "network" : file.spec.name);
  GraphBuilder g(*graph);
  Exporter exporter(file, g);
  const std::vector<const LayerSpec*> outputs = exporter.build();

  ExportReport report;
  report.opset = kOpset;
  for (const LayerSpec& l : file.spec.layers)
    if (l.kind == LayerKind::Input) report.inputs.push_back(l.name);
  for (const LayerSpec* o : outputs) {
    // The graph's outputs are named after the layers: an Identity names the last tensor so.
    const std::string& t = exporter.flat(o->name);
    if (t != o->name) g.node("Identity", {t}, {o->name});
    g.output(o->name, {int64_t(o->units())});
    report.outputs.push_back(o->name);
  }
  if (job.top_k > 0) {
    const LayerSpec& o = *outputs.front();
    if (job.top_k > o.units())
      throw ArgumentError("top-k " + std::to_string(job.top_k) + ": the output layer '" + o.name +
                          "' has " + std::to_string(o.units()) + " units");
    const std::string scores = o.name + "_topk_scores", index = o.name + "_topk_indices";
    g.name(scores);
    g.name(index);
    onnx::NodeProto& n =
        g.node("TopK", {o.name, g.int64s(o.name + "_k", {int64_t(job.top_k)})}, {scores, index});
    GraphBuilder::attribute(n, "axis", int64_t(-1));
    g.output(scores, {int64_t(job.top_k)});
    g.output(index, {int64_t(job.top_k)}, onnx::TensorProto::INT64);
    report.outputs.push_back(scores);
    report.outputs.push_back(index);
  }
  // The network's items travel with the model (docs/retraining.md): per item layer the names of
  // its units in unit order, one per line ("" for an unnamed unit), in the model's metadata
  // under "nn_items:<layer>", so that a runtime's top-k columns can be named without an index.
  for (const LayerSpec& l : file.spec.layers) {
    if (!l.features) continue;
    std::string names;
    for (const std::string& n : *l.features) names += n + "\n";
    onnx::StringStringEntryProto* entry = model.add_metadata_props();
    entry->set_key("nn_items:" + l.name);
    entry->set_value(names);
    report.item_layers.push_back(l.name);
  }
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw InternalError("the exported graph fails ONNX's checker: " + std::string(e.what()));
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw InternalError("the ONNX model could not be serialised (over protobuf's 2 GiB limit?)");
  // A stop request (a signal to nn-export) leaves the target as it was.
  throw_if_stop_requested("before writing " + job.output + "; nothing was written");
  if (job.output == "-") {
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout))
      throw IoError("standard output: write failed");
  } else {
    write_file_atomically(job.output, bytes);
  }
  report.nodes = uint64_t(graph->node_size());
  report.parameters = g.parameters();
  report.bytes = bytes.size();
  log("wrote " + job.output + ": ONNX opset " + std::to_string(kOpset) + ", " +
      std::to_string(report.nodes) + " nodes, " + std::to_string(report.parameters) +
      " parameters, " + std::to_string(bytes.size()) + " bytes");
  for (const std::string& layer : report.item_layers)
    log("the items of layer '" + layer + "' are in the model's metadata (nn_items:" + layer + ")");
  return report;
}

}  // namespace nn::api
