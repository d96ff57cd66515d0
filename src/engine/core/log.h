// Progress reporting without printing from the library: the engine calls a sink that the tool
// installs (rank 0 prints to stderr, other ranks stay silent). The sink type is public
// (include/nn/log.h); the default sink discards.
#pragma once

#include "nn/log.h"
