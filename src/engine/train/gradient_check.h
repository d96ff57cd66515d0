// Finite-difference gradient check of a whole network on one minibatch, as DSSTNE's Validate
// command does (NNNetwork::Validate in NNNetwork.cpp; man nn-train, Validate): the gradients
// backward() produces for every weight and bias are compared with differences of the batch-mean
// data loss (no regularisation) under small perturbations of each entry. Used by `nn-train` for
// CDL Command "Validate" and by the tests.
//
// The loss is a float32 computation summed in double, so it carries rounding noise that grows
// with its size (a recommender's loss sums thousands of outputs per example): divided by a small
// step, that noise alone can exceed a fixed tolerance while the gradients are right. So the
// checker measures the noise of each array's loss (a line fitted through losses a fraction of a
// step apart; what is left over is rounding), takes each entry's step relative to the entry and
// large enough for the noise, and adds the noise over the step to the tolerance. Where a kink
// (ReLU, max pooling) lies between w - h and w + h, a central difference mixes two slopes; an
// entry whose backward gradient equals the second-order one-sided difference on one side passes
// as such, and one with kinks on both sides gets another try with a step 8 times smaller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/batch_loader.h"
#include "model/binding.h"
#include "model/network.h"
#include "train/step.h"

namespace nn {

struct GradientCheckOptions {
  // Step of entry w: epsilon * max(1, |w|), raised (up to kMaxStepFactor times) where the loss's
  // rounding noise needs a larger one.
  double epsilon = 1e-3;
  bool central = true;  // (E(w+h) - E(w-h)) / 2h; false: one-sided like DSSTNE
  // An entry passes when |analytic - numeric| <= abs_tolerance + rel_tolerance * |numeric| +
  // noise_factor * (the loss's rounding noise) / h.
  double abs_tolerance = 2e-3;
  double rel_tolerance = 2e-2;
  double noise_factor = 8.0;
  // Entries checked per parameter array; 0 = all. A larger array is sampled: half of the budget
  // goes to the entries with the largest analytic gradients (where wiring mistakes show), the rest
  // to entries drawn at random with `seed`.
  size_t max_entries = 0;
  uint64_t seed = 1;
  // Forward/backward in training mode (dropout masks are fixed for a given step, so the loss is
  // still a deterministic function of the parameters). DSSTNE checks in inference mode.
  bool training = false;
};

struct EntryCheck {
  size_t index = 0;
  double analytic = 0.0, numeric = 0.0;
};

struct ParameterCheck {
  std::string name;       // the parameter's name, e.g. "Hidden<-Input:weights"
  size_t size = 0;        // entries in the array
  size_t checked = 0;     // entries compared
  size_t failures = 0;    // entries outside the tolerance
  size_t kinks = 0;       // entries that passed next to a kink (one-sided or smaller step)
  double max_error = 0;   // largest |analytic - numeric|
  double loss_noise = 0;  // rounding noise of the batch-mean loss, as measured
  double max_step = 0;    // largest step taken
  EntryCheck worst;       // the entry furthest outside (or closest to) its tolerance
  bool passed() const { return failures == 0; }
};

struct GradientCheckReport {
  uint32_t rows = 0;  // examples in the minibatch
  double loss = 0.0;  // batch-mean data loss at the unperturbed parameters
  std::vector<ParameterCheck> parameters;
  size_t failures() const;  // parameters that failed
  bool passed() const { return failures() == 0; }
};

class GradientChecker {
 public:
  // `batch` must have been assembled from `data`. Grows the network's batch buffers if needed.
  GradientChecker(Network& net, const BoundData& data, const HostBatch& batch,
                  GradientCheckOptions options = {});

  // Forward + backward at the current parameters, leaving dE/dw of the batch-mean loss in each
  // parameter's grad. Returns the batch-mean loss.
  double compute_analytic();
  // Compares `analytic` (the host copy of p's gradient; tests may alter it) with finite
  // differences of the loss. Restores every entry it perturbs.
  ParameterCheck check(Parameter& p, const std::vector<float>& analytic);
  // compute_analytic() then check() for every parameter of the network.
  GradientCheckReport run();
  // Batch-mean data loss at the current parameter values (forward only).
  double loss();

 private:
  std::vector<size_t> entries_to_check(const Parameter& p,
                                       const std::vector<float>& analytic) const;
  // One finite difference of entry i (value w) with step h against the backward gradient a,
  // given the loss `base` at w and its rounding `noise`: central (or one-sided) quotient and its
  // tolerance; passed when within it, or, central, when a equals the second-order one-sided
  // difference on either side (a kink on the other). Restores the entry.
  struct Difference {
    double numeric = 0, allowed = 0;
    bool central_ok = false, kink = false;
    bool passed() const { return central_ok || kink; }
  };
  Difference difference(Parameter& p, size_t i, float w, double h, double a, double base,
                        double noise);
  // The loss with entry i of p set to w + offset (as float); restores nothing.
  double loss_with(Parameter& p, size_t i, float w, double offset, double* step_taken);
  // Standard deviation of the loss's rounding noise around entry i: losses at 4 points a
  // fraction of a step from w and `base` at w, a least-squares line through them, and the
  // residual spread. Restores the entry.
  double noise_at(Parameter& p, size_t i, double base);

  Network& net_;
  BoundData data_;
  const HostBatch& batch_;
  GradientCheckOptions options_;
  OutputLosses losses_;
};

// The first `minibatch` examples of `data` in dataset order (no shuffling, no denoising).
HostBatch first_batch(const BoundData& data, uint32_t minibatch);

// One line per parameter for reports, e.g.
// "PASS Hidden<-Input:weights: 24/24 entries, max |error| 1.2e-05".
std::string describe(const ParameterCheck& check);

}  // namespace nn
