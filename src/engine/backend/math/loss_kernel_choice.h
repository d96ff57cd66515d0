// Which row-kernel instance computes a loss: the one table that the CPU backend (cpu/loss.cpp),
// the CUDA launcher (cuda/loss.cu) and the host emulations of the CUDA kernels in the tests
// share, so the tests check the instances the GPU really runs. A picker P supplies the instances:
//   template <Form F, DerivKind D, bool kJacobian> static R rows();  // the per-unit rows kernel
//   static R softmax_ce();                                           // SoftMax + CrossEntropy
// SoftMax outputs use the Jacobian form of each error function (DerivKind::One) except
// CrossEntropy's closed form; every other activation the per-unit derivative of its kind.
// choose_loss_kernel returns R{} for a pair no kernel handles.
#pragma once

#include "backend/math/activation_math.h"
#include "backend/math/loss_math.h"

namespace nn::math {

template <class P, Form F>
auto loss_rows_for_deriv(DerivKind dk) -> decltype(P::softmax_ce()) {
  switch (dk) {
    case DerivKind::Sigmoid:
      return P::template rows<F, DerivKind::Sigmoid, false>();
    case DerivKind::Tanh:
      return P::template rows<F, DerivKind::Tanh, false>();
    case DerivKind::One:
      return P::template rows<F, DerivKind::One, false>();
    case DerivKind::Step:
      return P::template rows<F, DerivKind::Step, false>();
    case DerivKind::Clip:
      return P::template rows<F, DerivKind::Clip, false>();
    case DerivKind::Elu:
      return P::template rows<F, DerivKind::Elu, false>();
    case DerivKind::SoftPlus:
      return P::template rows<F, DerivKind::SoftPlus, false>();
    case DerivKind::SoftSign:
      return P::template rows<F, DerivKind::SoftSign, false>();
    case DerivKind::SoftMax:
      break;
  }
  return {};
}

template <class P>
auto choose_loss_kernel(Form f, DerivKind dk, bool softmax) -> decltype(P::softmax_ce()) {
  if (softmax) {
    switch (f) {
      case Form::CrossEntropy:
        return P::softmax_ce();
      case Form::Smce:
      case Form::SmceSoftMax:
        return P::template rows<Form::SmceSoftMax, DerivKind::One, false>();
      case Form::L1:
        return P::template rows<Form::L1, DerivKind::One, true>();
      case Form::L2:
        return P::template rows<Form::L2, DerivKind::One, true>();
      case Form::L2Hinge:
        return P::template rows<Form::L2Hinge, DerivKind::One, true>();
      case Form::Hinge:
        return P::template rows<Form::Hinge, DerivKind::One, true>();
      case Form::Dsmce:
        return P::template rows<Form::Dsmce, DerivKind::One, true>();
    }
    return {};
  }
  switch (f) {
    case Form::L1:
      return loss_rows_for_deriv<P, Form::L1>(dk);
    case Form::L2:
      return loss_rows_for_deriv<P, Form::L2>(dk);
    case Form::L2Hinge:
      return loss_rows_for_deriv<P, Form::L2Hinge>(dk);
    case Form::Hinge:
      return loss_rows_for_deriv<P, Form::Hinge>(dk);
    case Form::CrossEntropy:
      return loss_rows_for_deriv<P, Form::CrossEntropy>(dk);
    case Form::Smce:
      return loss_rows_for_deriv<P, Form::Smce>(dk);
    case Form::Dsmce:
      return loss_rows_for_deriv<P, Form::Dsmce>(dk);
    case Form::SmceSoftMax:
      break;
  }
  return {};
}

}  // namespace nn::math
