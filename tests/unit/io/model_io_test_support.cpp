// Scratch directories, sample networks and the field-by-field comparison for the model_io tests.
#include "io/model_io_test_support.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace nn::test {

namespace fs = std::filesystem;

ScratchDir::ScratchDir() {
  std::string pattern = (fs::temp_directory_path() / "nn_model_io_XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(path_, ec);
}

std::vector<std::string> ScratchDir::entries() const {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(path_)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<float> sample_values(size_t count, uint32_t seed) {
  std::vector<float> v(count);
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < count; ++i) {
    x = x * 1664525u + 1013904223u;
    // Mantissa bits from the generator, sign and a spread of exponents: round trips must be exact.
    const float unit = float(x >> 8) / float(1u << 24);
    const float scale = (i % 3 == 0) ? 1e-3f : (i % 3 == 1 ? 1.0f : 37.0f);
    v[i] = (x & 1u ? -1.0f : 1.0f) * unit * scale;
  }
  return v;
}

namespace {

LayerSpec layer(const std::string& name, LayerKind kind, std::array<uint32_t, 4> n, int dims,
                std::vector<std::string> sources = {}) {
  LayerSpec l;
  l.name = name;
  l.kind = kind;
  l.n = n;
  l.dimensions = dims;
  l.sources = std::move(sources);
  l.relu_slope = 0.3f;
  l.elu_alpha = 0.7f;
  l.selu_lambda = 1.2f;
  return l;
}

WeightArrays fc_weight(const std::string& in, uint64_t n_in, const std::string& out, uint64_t n_out,
                       uint32_t seed, int states) {
  WeightArrays w;
  w.input_layer = in;
  w.output_layer = out;
  w.width = n_out;
  w.height = n_in;
  w.weights = sample_values(n_in * n_out, seed);
  w.bias = sample_values(n_out, seed + 100);
  for (int k = 0; k < states; ++k) {
    w.weight_state.push_back(sample_values(n_in * n_out, seed + 200 + k));
    w.bias_state.push_back(sample_values(n_out, seed + 300 + k));
  }
  return w;
}

}  // namespace

NetworkFile rich_network_file() {
  NetworkFile f;
  NetworkSpec& s = f.spec;
  s.version = 0.875f;
  s.name = "rich network";
  s.kind = NetworkKind::AutoEncoder;
  s.error_function = ErrorFunction::ScaledMarginalCrossEntropy;
  s.lrn_k = 3.0f;
  s.lrn_alpha = 2e-4f;
  s.lrn_beta = 0.5f;
  s.lrn_n = 7;
  s.maxout_k = 3;
  s.sparseness_penalty_p = 0.1f;
  s.sparseness_penalty_beta = 2.0f;
  s.denoising_p = 0.2f;
  s.delta_boost_one = 1.5f;
  s.delta_boost_zero = 0.5f;
  s.smce_one_target = 0.8f;
  s.smce_zero_target = 0.2f;
  s.smce_one_scale = 2.0f;
  s.smce_zero_scale = 0.25f;
  s.shuffle_indices = false;
  s.relu_slope = 0.3f;
  s.elu_alpha = 0.7f;
  s.selu_lambda = 1.2f;
  s.decay = 0.01f;

  LayerSpec input = layer("Input", LayerKind::Input, {8, 1, 1, 1}, 1);
  input.dataset = "input";
  input.sparse = true;
  LayerSpec side = layer("Side", LayerKind::Input, {3, 1, 1, 1}, 1);
  side.dataset = "side";
  LayerSpec hidden1 = layer("Hidden1", LayerKind::Hidden, {6, 1, 1, 1}, 1, {"Input", "Side"});
  hidden1.batch_normalization = true;
  hidden1.sparse = true;
  hidden1.activation = Activation::RectifiedLinear;
  hidden1.p_dropout = 0.25f;
  hidden1.weight_init = WeightInit::Gaussian;
  hidden1.weight_init_scale = 0.5f;
  hidden1.bias_init = 0.125f;
  hidden1.weight_norm = 2.5f;
  hidden1.delta_norm = 1.5f;
  hidden1.sparseness_penalty_p = 0.05f;
  hidden1.sparseness_penalty_beta = 1.25f;
  hidden1.relu_slope = 0.2f;
  hidden1.elu_alpha = 1.5f;
  hidden1.selu_lambda = 1.1f;
  LayerSpec hidden2 = layer("Hidden2", LayerKind::Hidden, {3, 2, 1, 1}, 2, {"Hidden1"});
  hidden2.skips = {"Hidden1"};
  hidden2.activation = Activation::ScaledExponentialLinear;
  hidden2.weight_init = WeightInit::SELU;
  LayerSpec output = layer("Output", LayerKind::Output, {8, 1, 1, 1}, 1, {"Hidden2"});
  output.dataset = "output";
  output.activation = Activation::SoftMax;
  output.weight_init = WeightInit::CaffeXavier;
  SharedWeightSpec shared;
  shared.source_input_layer = "Input";
  shared.source_output_layer = "Hidden1";
  shared.input_layer = "Hidden2";
  shared.transposed = true;
  output.shared_weights.push_back(shared);
  s.layers = {input, side, hidden1, hidden2, output};

  f.weights.push_back(fc_weight("Input", 8, "Hidden1", 6, 1, 2));
  f.weights.back().norm = 2.5f;
  f.weights.push_back(fc_weight("Side", 3, "Hidden1", 6, 2, 2));
  f.weights.back().locked = true;
  f.weights.push_back(fc_weight("Hidden1", 6, "Hidden2", 6, 3, 2));
  WeightArrays tied = fc_weight("Hidden2", 6, "Output", 8, 4, 0);
  tied.shared = true;
  tied.transposed = true;
  tied.source_input_layer = "Input";
  tied.source_output_layer = "Hidden1";
  tied.weights.clear();
  tied.bias_state = {sample_values(8, 501), sample_values(8, 502)};
  f.weights.push_back(tied);

  LayerArrays bn;
  bn.layer = "Hidden1";
  bn.bn_scale = sample_values(6, 601);
  bn.bn_bias = sample_values(6, 602);
  bn.bn_running_mean = sample_values(6, 603);
  bn.bn_running_variance = sample_values(6, 604);
  bn.bn_scale_state = {sample_values(6, 605), sample_values(6, 606)};
  bn.bn_bias_state = {sample_values(6, 607), sample_values(6, 608)};
  f.layers.push_back(bn);

  TrainingState& t = f.training;
  t.present = true;
  t.epoch = 7;
  t.step = 1234567890123ull;  // beyond 32 bits
  t.rng_state = 0xFEDCBA9876543210ull;
  t.seed = 42;
  t.optimizer = OptimizerKind::Adam;
  t.alpha = 0.001f;
  t.lambda = 1e-4f;
  t.lambda1 = 2e-5f;
  t.mu = 0.9f;
  t.mu1 = 0.999f;
  t.minibatch = 256;
  t.smoothed_error = 0.3125f;
  f.checkpoint_name = "ckpt/run";
  f.checkpoint_interval = 5;
  return f;
}

NetworkFile conv_network_file() {
  NetworkFile f;
  f.spec.name = "conv";
  LayerSpec image = layer("Image", LayerKind::Input, {6, 6, 1, 1}, 2);
  image.dataset = "images";
  LayerSpec conv = layer("Conv", LayerKind::Hidden, {6, 6, 4, 1}, 3, {"Image"});
  conv.type = LayerType::Convolutional;
  conv.kernel = {3, 3, 1};
  conv.kernel_dimensions = 2;
  conv.activation = Activation::RectifiedLinear;
  LayerSpec pool = layer("Pool", LayerKind::Hidden, {3, 3, 4, 1}, 3, {"Conv"});
  pool.type = LayerType::Pooling;
  pool.pooling = PoolingFunction::Max;
  pool.kernel = {2, 2, 1};
  pool.kernel_stride = {2, 2, 1};
  pool.kernel_dimensions = 2;
  LayerSpec out = layer("Output", LayerKind::Output, {10, 1, 1, 1}, 1, {"Pool"});
  out.dataset = "labels";
  out.activation = Activation::SoftMax;
  f.spec.layers = {image, conv, pool, out};

  // cuDNN filter order: [out channels][in channels][kernel y][kernel x] (docs/file-formats.md,
  // "Weight attributes and arrays").
  WeightArrays cw;
  cw.input_layer = "Image";
  cw.output_layer = "Conv";
  cw.width = 4;
  cw.height = 1;
  cw.length = 3;
  cw.depth = 3;
  cw.weights = sample_values(36, 11);
  cw.bias = sample_values(4, 12);
  f.weights.push_back(cw);
  f.weights.push_back(fc_weight("Pool", 36, "Output", 10, 13, 1));
  return f;
}

void expect_same_network_file(const NetworkFile& e, const NetworkFile& a) {
  const NetworkSpec& es = e.spec;
  const NetworkSpec& as = a.spec;
  EXPECT_EQ(es.version, as.version);
  EXPECT_EQ(es.name, as.name);
  EXPECT_EQ(es.kind, as.kind);
  EXPECT_EQ(es.error_function, as.error_function);
  EXPECT_EQ(es.lrn_k, as.lrn_k);
  EXPECT_EQ(es.lrn_alpha, as.lrn_alpha);
  EXPECT_EQ(es.lrn_beta, as.lrn_beta);
  EXPECT_EQ(es.lrn_n, as.lrn_n);
  EXPECT_EQ(es.maxout_k, as.maxout_k);
  EXPECT_EQ(es.sparseness_penalty_p, as.sparseness_penalty_p);
  EXPECT_EQ(es.sparseness_penalty_beta, as.sparseness_penalty_beta);
  EXPECT_EQ(es.denoising_p, as.denoising_p);
  EXPECT_EQ(es.delta_boost_one, as.delta_boost_one);
  EXPECT_EQ(es.delta_boost_zero, as.delta_boost_zero);
  EXPECT_EQ(es.smce_one_target, as.smce_one_target);
  EXPECT_EQ(es.smce_zero_target, as.smce_zero_target);
  EXPECT_EQ(es.smce_one_scale, as.smce_one_scale);
  EXPECT_EQ(es.smce_zero_scale, as.smce_zero_scale);
  EXPECT_EQ(es.shuffle_indices, as.shuffle_indices);
  EXPECT_EQ(es.relu_slope, as.relu_slope);
  EXPECT_EQ(es.elu_alpha, as.elu_alpha);
  EXPECT_EQ(es.selu_lambda, as.selu_lambda);
  EXPECT_EQ(es.decay, as.decay);
  ASSERT_EQ(es.layers.size(), as.layers.size());
  for (size_t i = 0; i < es.layers.size(); ++i) {
    SCOPED_TRACE("layer " + std::to_string(i));
    const LayerSpec& el = es.layers[i];
    const LayerSpec& al = as.layers[i];
    EXPECT_EQ(el.name, al.name);
    EXPECT_EQ(el.kind, al.kind);
    EXPECT_EQ(el.type, al.type);
    EXPECT_EQ(el.pooling, al.pooling);
    EXPECT_EQ(el.dataset, al.dataset);
    EXPECT_EQ(el.n_auto, al.n_auto);
    EXPECT_EQ(el.n, al.n);
    EXPECT_EQ(el.dimensions, al.dimensions);
    EXPECT_EQ(el.sources, al.sources);
    EXPECT_EQ(el.skips, al.skips);
    EXPECT_EQ(el.sparse, al.sparse);
    EXPECT_EQ(el.p_dropout, al.p_dropout);
    EXPECT_EQ(el.activation, al.activation);
    EXPECT_EQ(el.weight_init, al.weight_init);
    EXPECT_EQ(el.weight_init_scale, al.weight_init_scale);
    EXPECT_EQ(el.bias_init, al.bias_init);
    EXPECT_EQ(el.weight_norm, al.weight_norm);
    EXPECT_EQ(el.delta_norm, al.delta_norm);
    EXPECT_EQ(el.kernel, al.kernel);
    EXPECT_EQ(el.kernel_dimensions, al.kernel_dimensions);
    EXPECT_EQ(el.kernel_stride, al.kernel_stride);
    EXPECT_EQ(el.batch_normalization, al.batch_normalization);
    EXPECT_EQ(el.sparseness_penalty_p, al.sparseness_penalty_p);
    EXPECT_EQ(el.sparseness_penalty_beta, al.sparseness_penalty_beta);
    EXPECT_EQ(el.relu_slope, al.relu_slope);
    EXPECT_EQ(el.elu_alpha, al.elu_alpha);
    EXPECT_EQ(el.selu_lambda, al.selu_lambda);
    ASSERT_EQ(el.shared_weights.size(), al.shared_weights.size());
    for (size_t j = 0; j < el.shared_weights.size(); ++j) {
      EXPECT_EQ(el.shared_weights[j].source_input_layer, al.shared_weights[j].source_input_layer);
      EXPECT_EQ(el.shared_weights[j].source_output_layer, al.shared_weights[j].source_output_layer);
      EXPECT_EQ(el.shared_weights[j].input_layer, al.shared_weights[j].input_layer);
      EXPECT_EQ(el.shared_weights[j].transposed, al.shared_weights[j].transposed);
    }
  }
  ASSERT_EQ(e.weights.size(), a.weights.size());
  for (size_t i = 0; i < e.weights.size(); ++i) {
    SCOPED_TRACE("weight " + std::to_string(i));
    const WeightArrays& ew = e.weights[i];
    const WeightArrays& aw = a.weights[i];
    EXPECT_EQ(ew.input_layer, aw.input_layer);
    EXPECT_EQ(ew.output_layer, aw.output_layer);
    EXPECT_EQ(ew.width, aw.width);
    EXPECT_EQ(ew.height, aw.height);
    EXPECT_EQ(ew.length, aw.length);
    EXPECT_EQ(ew.depth, aw.depth);
    EXPECT_EQ(ew.breadth, aw.breadth);
    EXPECT_EQ(ew.shared, aw.shared);
    EXPECT_EQ(ew.locked, aw.locked);
    EXPECT_EQ(ew.transposed, aw.transposed);
    EXPECT_EQ(ew.source_input_layer, aw.source_input_layer);
    EXPECT_EQ(ew.source_output_layer, aw.source_output_layer);
    EXPECT_EQ(ew.norm, aw.norm);
    EXPECT_EQ(ew.weights, aw.weights);
    EXPECT_EQ(ew.bias, aw.bias);
    EXPECT_EQ(ew.weight_state, aw.weight_state);
    EXPECT_EQ(ew.bias_state, aw.bias_state);
  }
  ASSERT_EQ(e.layers.size(), a.layers.size());
  for (size_t i = 0; i < e.layers.size(); ++i) {
    SCOPED_TRACE("layer arrays " + std::to_string(i));
    EXPECT_EQ(e.layers[i].layer, a.layers[i].layer);
    EXPECT_EQ(e.layers[i].bn_scale, a.layers[i].bn_scale);
    EXPECT_EQ(e.layers[i].bn_bias, a.layers[i].bn_bias);
    EXPECT_EQ(e.layers[i].bn_running_mean, a.layers[i].bn_running_mean);
    EXPECT_EQ(e.layers[i].bn_running_variance, a.layers[i].bn_running_variance);
    EXPECT_EQ(e.layers[i].bn_scale_state, a.layers[i].bn_scale_state);
    EXPECT_EQ(e.layers[i].bn_bias_state, a.layers[i].bn_bias_state);
  }
  const TrainingState& et = e.training;
  const TrainingState& at = a.training;
  EXPECT_EQ(et.present, at.present);
  EXPECT_EQ(et.epoch, at.epoch);
  EXPECT_EQ(et.step, at.step);
  EXPECT_EQ(et.rng_state, at.rng_state);
  EXPECT_EQ(et.seed, at.seed);
  EXPECT_EQ(et.optimizer, at.optimizer);
  EXPECT_EQ(et.alpha, at.alpha);
  EXPECT_EQ(et.lambda, at.lambda);
  EXPECT_EQ(et.lambda1, at.lambda1);
  EXPECT_EQ(et.mu, at.mu);
  EXPECT_EQ(et.mu1, at.mu1);
  EXPECT_EQ(et.minibatch, at.minibatch);
  EXPECT_EQ(et.smoothed_error, at.smoothed_error);
  EXPECT_EQ(e.checkpoint_name, a.checkpoint_name);
  EXPECT_EQ(e.checkpoint_interval, a.checkpoint_interval);
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

}  // namespace nn::test
