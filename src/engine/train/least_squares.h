// Closed-form training of a linear network (docs/quality.md, "Closed-form training"): one sparse
// Input layer feeding one linear FullyConnected Output layer with the L2 error. The weights W and
// bias b that gradient training of that network approaches, the minimiser of its expected
// objective over the whole dataset (denoising with probability p, inverted-dropout scaling, L2
// weight decay lambda on the weights), are found exactly:
//
//   minimise  sum_n ||y_n - x_n W - b||^2 + sum_i (p/(1-p) G_ii + N lambda) ||W_i||^2
//
// with G = X^T X over the N training examples and W_i the weights of input unit i (the objective
// gradient training minimises, 1/(2N) of this, in expectation over the denoising masks). With
// the bias as a column of ones A = [X 1]^T [X 1] + diag(Lambda, 0) and W_b = A^-1 [X 1]^T Y,
// solved by a Cholesky factorisation (LAPACK through OpenBLAS). When the targets are the inputs
// (an autoencoder) A^-1 [X 1]^T X = I - A^-1 diag(Lambda), one inverse and no product.
// p = 0 with no weight decay is ordinary least squares; for an item x item autoencoder, p and
// lambda give the denoising linear autoencoder (DLAE, Steck 2020).
//
// With `zero_diagonal` (an autoencoder without biases) each input's weight to its own output is
// held at 0, so no item predicts itself: minimising the same objective under diag(W) = 0 gives
// W = I - A^-1 diag(gamma), gamma_j = 1 / (A^-1)_jj (Lagrange multipliers; Steck 2019). With
// p = 0 that is EASE with ridge N lambda; with p > 0 the fully emphasised denoising linear
// autoencoder (EDLAE, Steck 2020), whose ridge p/(1-p) G_ii grows with the item's count. The
// objective at the optimum is sum_j (gamma_j - Lambda_j).
#pragma once

#include <cstdint>
#include <string>

#include "model/binding.h"
#include "model/network.h"

namespace nn {

struct LeastSquaresReport {
  uint64_t examples = 0;
  uint32_t inputs = 0, outputs = 0;
  bool targets_are_inputs = false;  // the autoencoder shortcut ran
  double ridge = 0;                 // N * lambda
  double seconds = 0;
  // The expected objective at the solution per example, 1/(2N) of the sum above: the data term
  // under denoising plus lambda/2 ||W||^2 (the second alone in reg_loss).
  double loss = 0, reg_loss = 0;
};

// Throws ConfigError naming what the network or its data has that the closed form cannot take
// (another shape of network, activation, error function, dense or streamed data, several
// processes, L1 decay, dropout, a weight norm...).
void check_least_squares(const Network& net, const BoundData& data, float lambda1);

// Solves and writes the Output layer's weights and bias into the network's parameters. Throws
// ConfigError when the system is singular (an input unit no example has, with lambda 0) or the
// matrix would not fit the memory budget.
// `fit_bias` false: the biases are held at 0 (no column of ones; an item x item autoencoder
// without an intercept, as DLAE and EASE are).
// `zero_diagonal`: the constraint above (ConfigError unless the targets are the inputs and the
// biases are held at 0).
LeastSquaresReport solve_least_squares(Network& net, const BoundData& data, float lambda,
                                       float denoise_p, bool fit_bias = true,
                                       bool zero_diagonal = false);

}  // namespace nn
