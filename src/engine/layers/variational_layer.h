// Variational (Gaussian) bottleneck, the last step of a variational autoencoder's encoder
// (Kingma and Welling 2014; Mult-VAE, Liang et al. 2018). A fully connected map from its sources
// to q = [mean | log-variance], 2 x N values per example (one weight matrix [in][2N] and one bias
// [2N] per source, stored like a fully connected layer's with width 2N), then
//   training:   a = mean + noise * exp(log-variance / 2), noise ~ N(0, 1) (the reparameterisation
//               trick), drawn from counters keyed by (seed, update, layer, example position) as
//               dropout masks are, so a run resumes exactly and N processes draw what one does;
//   prediction: a = mean.
// Its own loss term, beta * KL(N(mean, exp(log-variance)) || N(0, I)) per example, joins the
// training loss, with beta = KL.Beta x min(1, updates done / KL.AnnealSteps) (KL annealing; a
// constant KL.Beta when AnnealSteps is 0), and backward() adds the term's gradient to the one
// that reached the sample. No activation (the sample is the output), dropout, skips, batch
// normalisation, DeltaNorm, sparseness penalty or SharedWeights; not split over processes.
// The per-element formulas are backend/math/variational_math.h (both backends).
#pragma once

#include <string>

#include "layers/fully_connected_layer.h"

namespace nn {

class VariationalLayer : public FullyConnectedLayer {
 public:
  VariationalLayer(const LayerSpec& spec, uint32_t index);

  void build(Backend& backend) override;
  void allocate(Backend& backend, uint32_t max_rows) override;
  void forward(const LayerContext& ctx) override;
  void backward(const LayerContext& ctx) override;
  bool can_shard(std::string* why_not) const override;
  // Its z holds two values per unit (a mean and a log-variance): never padded.
  bool can_pad_rows(std::string* why_not) const override {
    if (why_not) *why_not = "a Variational layer's rows are its moments, not its units";
    return false;
  }
  bool ends_with_activate() const override { return false; }
  void accumulate_own_loss(const LayerContext& ctx, double* sum) override;

  // The KL term's weight during update `step` (1-based, LayerContext::step): KL.Beta times
  // min(1, (step - 1) / KL.AnnealSteps), so the first update has weight 0 when annealing.
  float beta(uint64_t step) const;
  // The means and log-variances of the last forward pass ([rows][2N]).
  const float* moments() const { return q_.data(); }

 protected:
  uint32_t pieces_per_unit() const override { return 2; }

 private:
  // The noise stream of this layer for the rows of ctx (see dropout_stream in layers/layer.h).
  uint64_t noise_stream(const LayerContext& ctx) const;

  DeviceArray<float> q_, dq_;  // [max rows][2N]: the moments, and the loss's gradient for them
};

}  // namespace nn
