// Sizes of Convolutional and Pooling layers derived from their sources, as DSSTNE's
// CalculateDerivedLayerDimensions does after parsing (dsstne-reference.md §3.2; the rules are in
// layers/conv_geometry.h). Runs on a spec whose input sizes are known ("auto" resolved), before
// the layers are built; Network's constructor calls it.
//
// Hidden layers:
//  * Convolutional: spatial extents from the rule, channels from N. N is either the channel
//    count (an integer, as DSSTNE's configs write it) or the full derived size (what our network
//    files and JSON written back contain: kernel dimensions + 1 values), which must then match.
//  * Max/Average pooling: spatial extents from the rule, other dimensions from the source.
//  * LRN pooling: the source's size.
//  * Maxout pooling: the source's size with its last dimension (the channels) divided by the
//    network's Maxout.k, which must divide it.
//  * DotProduct / Cosine pooling: Nx = sources - 1 (one score per source after the first), from
//    at least 2 sources with the same number of units.
// Output layers keep the N they were given (DSSTNE does not derive them); it must match the
// derived spatial extents (and, for pooling, channels). Every source of a layer must give the
// same size. Idempotent, so specs read back from files pass through unchanged.
#pragma once

#include "config/network_spec.h"

namespace nn {

// Fills in the sizes. Throws ConfigError("<spec.source>: layer '<name>': ...") for pooling
// functions that have no implementation (Stochastic, LCN, GlobalTemporal), sources of different
// sizes, too few sources, a Maxout.k that does not divide the channels, or an N that contradicts
// the derived size. Sources that do not exist are left for Network to report.
void derive_layer_dimensions(NetworkSpec& spec);

}  // namespace nn
