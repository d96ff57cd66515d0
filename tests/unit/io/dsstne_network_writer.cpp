// Writes DSSTNE-layout network files with the raw netCDF-C++ API (see dsstne_network_writer.h).
#include "io/dsstne_network_writer.h"

#include <netcdf>
#include <stdexcept>

namespace nn::test {
namespace {

using netCDF::NcDim;
using netCDF::NcFile;
using netCDF::NcVar;

// Puts attributes with DSSTNE's NetCDF types, skipping names listed in `omit`.
class Writer {
 public:
  Writer(const NcFile& nc, const std::set<std::string>& omit) : nc_(nc), omit_(omit) {}

  bool skip(const std::string& name) const { return omit_.count(name) != 0; }
  void text(const std::string& name, const std::string& v) const {
    if (!skip(name)) nc_.putAtt(name, v);
  }
  void u32(const std::string& name, uint32_t v) const {
    if (!skip(name)) nc_.putAtt(name, netCDF::ncUint, static_cast<unsigned int>(v));
  }
  void u64(const std::string& name, uint64_t v) const {
    if (!skip(name)) nc_.putAtt(name, netCDF::ncUint64, static_cast<unsigned long long>(v));
  }
  void i32(const std::string& name, int v) const {
    if (!skip(name)) nc_.putAtt(name, netCDF::ncInt, v);
  }
  void f32(const std::string& name, float v) const {
    if (!skip(name)) nc_.putAtt(name, netCDF::ncFloat, v);
  }
  void floats(const std::string& dim_name,
              const std::vector<std::pair<std::string, const std::vector<float>*>>& vars) const {
    if (vars.empty() || vars[0].second->empty()) return;
    const NcDim dim = nc_.addDim(dim_name, vars[0].second->size());
    for (const auto& [name, values] : vars) {
      if (skip(name)) continue;
      NcVar var = nc_.addVar(name, netCDF::ncFloat, dim);
      var.putVar(values->data());
    }
  }

 private:
  const NcFile& nc_;
  const std::set<std::string>& omit_;
};

void write_layer(const Writer& w, size_t i, const DsstneLayer& l) {
  const std::string p = "layer" + std::to_string(i) + "_";
  w.text(p + "name", l.name);
  w.u32(p + "kind", l.kind);
  w.u32(p + "type", l.type);
  w.u32(p + "poolingfunction", l.pooling);
  w.text(p + "dataSet", l.dataset);
  w.u32(p + "Nx", l.nx);
  w.u32(p + "Ny", l.ny);
  w.u32(p + "Nz", l.nz);
  w.u32(p + "Nw", l.nw);
  w.u32(p + "dimensions", l.dimensions);
  w.u32(p + "kernelX", l.kernel_x);
  w.u32(p + "kernelY", l.kernel_y);
  w.u32(p + "kernelZ", l.kernel_z);
  w.u32(p + "kernelDimensions", l.kernel_dimensions);
  w.u32(p + "kernelStrideX", l.stride_x);
  w.u32(p + "kernelStrideY", l.stride_y);
  w.u32(p + "kernelStrideZ", l.stride_z);
  w.u32(p + "kernelPaddingX", l.padding_x);
  w.u32(p + "kernelPaddingY", l.padding_y);
  w.u32(p + "kernelPaddingZ", l.padding_z);
  w.f32(p + "pDropout", l.p_dropout);
  w.u32(p + "weightInit", l.weight_init);
  w.f32(p + "weightInitScale", l.weight_init_scale);
  w.f32(p + "biasInit", l.bias_init);
  w.f32(p + "weightNorm", l.weight_norm);
  w.f32(p + "deltaNorm", l.delta_norm);
  w.u32(p + "activation", l.activation);
  w.f32(p + "sparsenessPenalty_p", l.sparseness_penalty_p);
  w.f32(p + "sparsenessPenalty_beta", l.sparseness_penalty_beta);
  w.f32(p + "RELUSlope", l.relu_slope);
  w.f32(p + "ELUAlpha", l.elu_alpha);
  w.f32(p + "SELULambda", l.selu_lambda);
  w.u32(p + "attributes", l.attributes);
  w.u32(p + "sources", static_cast<uint32_t>(l.sources.size()));
  for (size_t j = 0; j < l.sources.size(); ++j)
    w.text(p + "source" + std::to_string(j), l.sources[j]);
  w.u32(p + "skips", static_cast<uint32_t>(l.skips.size()));
  for (size_t j = 0; j < l.skips.size(); ++j) w.text(p + "skip" + std::to_string(j), l.skips[j]);
  w.floats(p + "bnDim", {{p + "scaleBN", &l.bn_scale},
                         {p + "biasBN", &l.bn_bias},
                         {p + "runningMeanBN", &l.bn_running_mean},
                         {p + "runningVarianceBN", &l.bn_running_variance}});
}

void write_weight(const Writer& w, size_t i, const DsstneWeight& x) {
  const std::string p = "weight" + std::to_string(i) + "_";
  w.text(p + "inputLayer", x.input_layer);
  w.text(p + "outputLayer", x.output_layer);
  w.u64(p + "width", x.width);
  w.u64(p + "height", x.height);
  w.u64(p + "length", x.length);
  w.u64(p + "depth", x.depth);
  w.u64(p + "breadth", x.breadth);
  w.u32(p + "bShared", x.shared);
  w.u32(p + "bLocked", x.locked);
  w.f32(p + "norm", x.norm);
  w.floats(p + "biasDim", {{p + "bias", &x.bias}});
  if (x.shared) {
    w.u32(p + "bTransposed", x.transposed);
    w.text(p + "sourceInputLayer", x.source_input_layer);
    w.text(p + "sourceOutputLayer", x.source_output_layer);
  } else {
    w.floats(p + "weightDim", {{p + "weights", &x.weights}});
  }
}

}  // namespace

DsstneLayer dsstne_fc_layer(const std::string& name, uint32_t kind, uint32_t units,
                            std::vector<std::string> sources, uint32_t activation,
                            const std::string& dataset) {
  DsstneLayer l;
  l.name = name;
  l.kind = kind;
  l.nx = units;
  l.sources = std::move(sources);
  l.activation = activation;
  l.dataset = dataset;
  return l;
}

DsstneWeight dsstne_fc_weight(const std::string& input_layer, uint32_t n_in,
                              const std::string& output_layer, uint32_t n_out, float first,
                              float step, float bias_first) {
  DsstneWeight w;
  w.input_layer = input_layer;
  w.output_layer = output_layer;
  w.width = n_out;
  w.height = n_in;
  w.weights.resize(size_t(n_in) * n_out);
  for (size_t k = 0; k < w.weights.size(); ++k) w.weights[k] = first + step * float(k);
  w.bias.resize(n_out);
  for (uint32_t o = 0; o < n_out; ++o) w.bias[o] = bias_first + float(o);
  return w;
}

void write_dsstne_network(const std::string& path, const DsstneNetwork& net) {
  try {
    NcFile nc(path, NcFile::replace, NcFile::nc4);
    const Writer w(nc, net.omit);
    w.f32("version", net.version);
    w.text("name", net.name);
    w.u32("kind", net.kind);
    w.u32("errorFunction", net.error_function);
    w.i32("maxout_k", net.maxout_k);
    w.f32("decay", net.decay);
    w.f32("LRN_k", net.lrn_k);
    w.i32("LRN_n", net.lrn_n);
    w.f32("LRN_alpha", net.lrn_alpha);
    w.f32("LRN_beta", net.lrn_beta);
    w.u32("bSparsenessPenalty", net.sparseness_penalty_beta > 0.0f);
    w.f32("sparsenessPenalty_p", net.sparseness_penalty_p);
    w.f32("sparsenessPenalty_beta", net.sparseness_penalty_beta);
    w.u32("bDenoising", net.denoising_p > 0.0f);
    w.f32("denoising_p", net.denoising_p);
    w.f32("deltaBoost_one", net.delta_boost_one);
    w.f32("deltaBoost_zero", net.delta_boost_zero);
    w.f32("SMCE_oneScale", net.smce_one_scale);
    w.f32("SMCE_zeroScale", net.smce_zero_scale);
    w.f32("SMCE_oneTarget", net.smce_one_target);
    w.f32("SMCE_zeroTarget", net.smce_zero_target);
    w.u32("ShuffleIndices", net.shuffle_indices);
    w.text("checkpoint_name", net.checkpoint_name);
    w.i32("checkpoint_interval", net.checkpoint_interval);
    w.i32("checkpoint_epochs", net.checkpoint_epochs);
    w.u32("layers", static_cast<uint32_t>(net.layers.size()));
    for (size_t i = 0; i < net.layers.size(); ++i) write_layer(w, i, net.layers[i]);
    w.u32("weights", static_cast<uint32_t>(net.weights.size()));
    for (size_t i = 0; i < net.weights.size(); ++i) write_weight(w, i, net.weights[i]);
  } catch (const netCDF::exceptions::NcException& e) {
    throw std::runtime_error(path + ": write_dsstne_network: " + e.what());
  }
}

}  // namespace nn::test
