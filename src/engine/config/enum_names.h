// Text names of the config enumerations: parsing from the spellings DSSTNE accepts
// (case-insensitive, with its aliases such as "relu" or "Cross Entropy") and the list of choices
// for error messages. The canonical spelling of each value is to_string() from config/enums.h.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/enums.h"

namespace nn {

// Returns the value named by `text` (case-insensitive, aliases accepted), or nullopt when the name
// is not one that a config file may use. Defined for LayerKind, LayerType, Activation,
// ErrorFunction, WeightInit, PoolingFunction, NetworkKind, OptimizerKind, Command,
// RowNormalization and SoftMaxTargets.
// Some values exist only as numeric codes (e.g. Activation::ParametricRectifiedLinear,
// PoolingFunction::Stochastic): DSSTNE rejects them in configs, and so do we.
template <class E>
std::optional<E> enum_from_string(std::string_view text);

// The names a config may use for E, canonical first, aliases in parentheses:
// "Sigmoid, Tanh, Linear, RectifiedLinear (ReLU), ...". For "expected one of ..." messages.
template <class E>
std::string enum_choices();

// ASCII lower-casing used for every case-insensitive comparison in the config layer.
std::string to_lower(std::string_view text);

}  // namespace nn
