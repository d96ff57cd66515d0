// Finite-difference gradient check of a whole network on one minibatch, as DSSTNE's Validate
// command does (NNNetwork::Validate in NNNetwork.cpp; man nn-train, Validate): the gradients
// backward() produces for every weight and bias are compared with differences of the batch-mean
// data loss (no regularisation) under small perturbations of each entry. Used by `nn-train` for
// CDL Command "Validate" and by the tests.
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
  double epsilon = 1e-3;  // perturbation added to one entry at a time
  bool central = true;    // (E(w+eps) - E(w-eps)) / 2eps; false: one-sided like DSSTNE
  // An entry passes when |analytic - numeric| <= abs_tolerance + rel_tolerance * |numeric|.
  double abs_tolerance = 2e-3;
  double rel_tolerance = 2e-2;
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
  std::string name;      // the parameter's name, e.g. "Hidden<-Input:weights"
  size_t size = 0;       // entries in the array
  size_t checked = 0;    // entries compared
  size_t failures = 0;   // entries outside the tolerance
  double max_error = 0;  // largest |analytic - numeric|
  EntryCheck worst;      // the entry furthest outside (or closest to) its tolerance
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
