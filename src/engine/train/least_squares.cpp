// Closed-form training of a linear network (train/least_squares.h says what is solved and why).
// The matrices are dense, (inputs + 1)^2 floats, built from the sparse training examples on the
// host; the factorisation runs in OpenBLAS on every core this process may use.
#include "train/least_squares.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/cpu_count.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "layers/input_layer.h"

extern "C" {
// LAPACK (in OpenBLAS), with gfortran's hidden string lengths.
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void spotri_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void sposv_(const char* uplo, const int* n, const int* nrhs, float* a, const int* lda, float* b,
            const int* ldb, int* info, size_t);
}

namespace nn {
namespace {

// LAPACK's 32-bit indices: an (n x n) matrix needs n * n < 2^31.
constexpr uint64_t kMaxUnits = 46340;

[[noreturn]] void refuse(const std::string& why) {
  throw ConfigError("closed-form training (Solver LeastSquares) " + why);
}

// Runs OpenBLAS on `threads` threads for the life of the object (the CPU backend keeps it on
// one: its own pool runs the products during training).
class BlasThreads {
 public:
  explicit BlasThreads(int threads) : before_(openblas_get_num_threads()) {
    openblas_set_num_threads(threads);
  }
  ~BlasThreads() { openblas_set_num_threads(before_); }
  BlasThreads(const BlasThreads&) = delete;
  BlasThreads& operator=(const BlasThreads&) = delete;

 private:
  int before_;
};

float value_at(const ExampleSet& d, uint64_t e) {
  return d.sparse_value.empty() ? 1.0f : d.sparse_value[e];
}

// Same examples, same entries, same values (the autoencoder's targets are its inputs).
bool same_entries(const ExampleSet& a, const ExampleSet& b) {
  if (a.width != b.width || a.examples != b.examples) return false;
  for (uint64_t n = 0; n < a.examples; ++n) {
    const uint64_t la = a.sparse_end[n] - a.sparse_start[n];
    if (b.sparse_end[n] - b.sparse_start[n] != la) return false;
    for (uint64_t k = 0; k < la; ++k) {
      const uint64_t ea = a.sparse_start[n] + k, eb = b.sparse_start[n] + k;
      if (a.sparse_index[ea] != b.sparse_index[eb] || value_at(a, ea) != value_at(b, eb))
        return false;
    }
  }
  return true;
}

}  // namespace

void check_least_squares(const Network& net, const BoundData& data, float lambda1) {
  const NetworkSpec& spec = net.spec();
  if (spec.layers.size() != 2 || spec.layers[0].kind != LayerKind::Input ||
      spec.layers[1].kind != LayerKind::Output)
    refuse("takes a network of one Input layer and one Output layer; '" + spec.name + "' has " +
           std::to_string(spec.layers.size()) + " layers");
  const LayerSpec& in = spec.layers[0];
  const LayerSpec& out = spec.layers[1];
  const std::string where = "the Output layer '" + out.name + "'";
  if (out.type != LayerType::FullyConnected) refuse("needs " + where + " to be FullyConnected");
  if (out.activation != Activation::Linear)
    refuse("needs " + where + " to have \"Activation\": \"Linear\"");
  if (spec.error_function != ErrorFunction::L2)
    refuse("needs \"ErrorFunction\": \"L2\" (the closed form is that of squared errors)");
  if (out.sources.size() != 1 || out.sources[0] != in.name || !out.skips.empty())
    refuse("needs " + where + " to take the Input layer '" + in.name + "' alone");
  if (in.p_dropout > 0 || out.p_dropout > 0)
    refuse("does not take pDropout (use the network's Denoising, which it solves for)");
  if (out.weight_norm > 0 || out.batch_normalization || !out.shared_weights.empty() ||
      out.sampling.negatives > 0 || in.normalize != RowNormalization::None)
    refuse("does not take WeightNorm, BatchNormalization, SharedWeights, Sampling or Normalize");
  if (lambda1 > 0) refuse("does not take L1 decay (Lambda1)");
  if (net.model_parallel() || !net.parallel_plan().empty())
    refuse("runs in one process (under mpirun, run nn-train without it)");
  if (data.inputs.size() != 1 || data.outputs.size() != 1 || !data.inputs[0].dataset ||
      !data.outputs[0].dataset)
    refuse("needs the Input and the Output layer bound to datasets");
  for (const LayerData* d : {&data.inputs[0], &data.outputs[0]}) {
    const ExampleSet& s = *d->dataset;
    if (!s.is_sparse())
      refuse("needs sparse datasets; '" + s.name + "' of layer '" + d->layer + "' is dense");
    if (s.sparse_start.size() != s.examples)
      refuse("needs the datasets in memory; '" + s.name + "' is streamed (give --no-stream)");
  }
  const uint64_t units = uint64_t(data.inputs[0].dataset->width) + 1;
  if (units > kMaxUnits)
    refuse("takes at most " + std::to_string(kMaxUnits - 1) + " input units (LAPACK's indices); '" +
           in.name + "' has " + std::to_string(units - 1));
}

LeastSquaresReport solve_least_squares(Network& net, const BoundData& data, float lambda,
                                       float denoise_p, bool fit_bias, bool zero_diagonal) {
  const auto start = std::chrono::steady_clock::now();
  const ExampleSet& x = *data.inputs[0].dataset;
  const ExampleSet& y = *data.outputs[0].dataset;
  const uint64_t n_in = x.width, n_out = y.width, examples = x.examples;
  const uint64_t units = n_in + (fit_bias ? 1 : 0);  // the bias as a column of ones
  const bool autoencoder = same_entries(x, y);
  if (zero_diagonal && (!autoencoder || fit_bias))
    refuse(std::string("with ZeroDiagonal needs ") +
           (autoencoder ? "the biases held at 0 (FitBias false), as EASE and EDLAE have none"
                        : "the targets to be the inputs (an item x item autoencoder: the Input "
                          "and Output datasets with the same entries)"));
  // The matrix, and for other targets the right-hand sides, beside the network.
  const uint64_t bytes = units * units * 4 + (autoencoder ? 0 : units * n_out * 4);
  if (bytes > memory_budget())
    refuse("needs " + format_bytes(bytes) + " for its matrices, more than the memory budget of " +
           format_bytes(memory_budget()) + " (--memory-limit)");

  // A = [X 1]^T [X 1], lower triangle, column-major (= row-major upper): a[j * units + i], i >= j.
  std::vector<float> a(size_t(units * units), 0.0f);
  for (uint64_t n = 0; n < examples; ++n) {
    const uint64_t b = x.sparse_start[n], e = x.sparse_end[n];
    for (uint64_t p = b; p < e; ++p) {
      const uint64_t i = x.sparse_index[p];
      const float vi = value_at(x, p);
      float* column = a.data() + i * units;
      for (uint64_t q = b; q < e; ++q) {
        const uint64_t j = x.sparse_index[q];
        if (j >= i) column[j] += vi * value_at(x, q);
      }
      if (fit_bias) column[n_in] += vi;  // the bias row: the column sums
    }
  }
  if (fit_bias) a[size_t(n_in * units + n_in)] = float(examples);
  // The ridge: p/(1-p) G_ii from the denoising, N lambda from the weight decay; not on the bias.
  const double ridge = double(examples) * lambda;
  const double noise = denoise_p > 0 ? double(denoise_p) / (1.0 - denoise_p) : 0.0;
  std::vector<double> diag_ridge(static_cast<size_t>(n_in));
  for (uint64_t i = 0; i < n_in; ++i) {
    float& d = a[size_t(i * units + i)];
    diag_ridge[i] = noise * d + ridge;
    d = float(d + diag_ridge[i]);
  }
  // sum ||y||^2: the objective at the optimum is this minus tr(C^T Z).
  double y_squares = 0;
  for (uint64_t e = 0; e < y.sparse_index.size(); ++e)
    y_squares += double(value_at(y, e)) * value_at(y, e);

  // W (n_in x n_out, row-major as the layer stores it) and b.
  std::vector<float> w(size_t(n_in * n_out), 0.0f), bias(size_t(n_out), 0.0f);
  double explained = 0;  // tr(C^T Z): the objective at the optimum is sum ||y||^2 - this
  const int n = int(units);
  int info = 0;
  const auto refuse_if_singular = [&info] {
    if (info != 0)
      refuse("found the system singular (LAPACK info " + std::to_string(info) +
             "): an input unit no example has needs Lambda > 0");
  };
  {
    BlasThreads threads(available_cpus());
    if (autoencoder) {
      // A^-1 from its Cholesky factor; W_b = I - A^-1 diag(Lambda) (columns 0..n_in-1).
      std::vector<double> a_diag(static_cast<size_t>(n_in));  // for the objective's value
      for (uint64_t i = 0; i < n_in; ++i) a_diag[i] = a[size_t(i * units + i)];
      spotrf_("L", &n, a.data(), &n, &info, 1);
      if (info == 0) spotri_("L", &n, a.data(), &n, &info, 1);
      refuse_if_singular();
      const auto inv = [&](uint64_t i, uint64_t j) {  // A^-1 (i, j) from its lower triangle
        return i >= j ? a[size_t(j * units + i)] : a[size_t(i * units + j)];
      };
      // The multiplier of column j: Lambda_j, or 1 / (A^-1)_jj for a zero diagonal.
      std::vector<double> gamma(diag_ridge);
      if (zero_diagonal)
        for (uint64_t j = 0; j < n_out; ++j) gamma[j] = 1.0 / double(inv(j, j));
      for (uint64_t i = 0; i < n_in; ++i)
        for (uint64_t j = 0; j < n_out; ++j)
          w[size_t(i * n_out + j)] =
              i == j && zero_diagonal ? 0.0f : float((i == j ? 1.0 : 0.0) - inv(i, j) * gamma[j]);
      if (fit_bias)
        for (uint64_t j = 0; j < n_out; ++j) bias[j] = float(-inv(n_in, j) * diag_ridge[j]);
      // tr(C^T Z) with C = [X 1]^T X = A - diag(Lambda) (first n_in columns) and Z = I - A^-1
      // diag(Lambda): column j gives C_jj - Lambda_j (A A^-1 - diag(Lambda) A^-1)_jj, that is
      // A_jj - 2 Lambda_j + Lambda_j^2 (A^-1)_jj; no copy of A needed.
      // With a zero diagonal, column j's objective is gamma_j - Lambda_j (A w_j = A_j - gamma_j
      // e_j and w_jj = 0), so it explains G_jj - gamma_j + Lambda_j = A_jj - gamma_j.
      for (uint64_t j = 0; j < n_out; ++j)
        explained += zero_diagonal ? a_diag[j] - gamma[j]
                                   : a_diag[j] - 2 * diag_ridge[j] +
                                         diag_ridge[j] * diag_ridge[j] * inv(j, j);
    } else {
      // C = [X 1]^T Y, column-major (units x n_out), then A Z = C by Cholesky.
      std::vector<float> c(size_t(units * n_out), 0.0f);
      for (uint64_t m = 0; m < examples; ++m)
        for (uint64_t q = y.sparse_start[m]; q < y.sparse_end[m]; ++q) {
          const uint64_t j = y.sparse_index[q];
          const float vj = value_at(y, q);
          float* column = c.data() + j * units;
          for (uint64_t p = x.sparse_start[m]; p < x.sparse_end[m]; ++p)
            column[x.sparse_index[p]] += value_at(x, p) * vj;
          if (fit_bias) column[n_in] += vj;
        }
      std::vector<float> z = c;
      const int rhs = int(n_out);
      sposv_("L", &n, &rhs, a.data(), &n, z.data(), &n, &info, 1);
      refuse_if_singular();
      for (uint64_t j = 0; j < n_out; ++j) {
        for (uint64_t i = 0; i < n_in; ++i) w[size_t(i * n_out + j)] = z[size_t(j * units + i)];
        if (fit_bias) bias[j] = z[size_t(j * units + n_in)];
        for (uint64_t i = 0; i < units; ++i)
          explained += double(c[size_t(j * units + i)]) * z[size_t(j * units + i)];
      }
    }
  }

  // Into the layer: its weights (n_in x n_out) and its bias (n_out).
  Layer& layer = net.layer(net.spec().layers[1].name);
  Parameter *weights = nullptr, *biases = nullptr;
  const auto ends_with = [](const std::string& s, const std::string& end) {
    return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
  };
  for (Parameter* p : layer.parameters()) {
    if (ends_with(p->name, ":weights")) weights = p;
    if (ends_with(p->name, ":bias")) biases = p;
  }
  if (!weights || !biases || weights->logical_size() != w.size() ||
      biases->logical_size() != bias.size())
    throw ConfigError("closed-form training: layer '" + layer.name() +
                      "' does not hold one weight matrix and one bias of the expected sizes");
  weights->upload_logical(weights->value, w.data(), w.size());  // padded rows where held so
  biases->upload_logical(biases->value, bias.data(), bias.size());

  LeastSquaresReport r;
  r.examples = examples;
  r.inputs = uint32_t(n_in);
  r.outputs = uint32_t(n_out);
  r.targets_are_inputs = autoencoder;
  r.ridge = ridge;
  double w_squares = 0;
  for (float v : w) w_squares += double(v) * v;
  r.reg_loss = 0.5 * lambda * w_squares;
  r.loss = 0.5 * (y_squares - explained) / double(std::max<uint64_t>(examples, 1));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace nn
