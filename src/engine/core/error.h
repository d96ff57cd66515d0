// Typed exceptions thrown by the engine: the public ones (include/nn/error.h, one definition for
// the library and its users) and NN_CHECK for internal invariants. The library never prints or
// exits; tools catch these, print "nn-<tool>: error: <what()>" and exit non-zero.
#pragma once

#include <string>

#include "nn/error.h"

// Throws nn::InternalError with the source location when `cond` is false.
#define NN_CHECK(cond, msg)                                                                     \
  do {                                                                                          \
    if (!(cond))                                                                                \
      throw ::nn::InternalError(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + \
                                "check failed: " #cond ": " + (msg));                           \
  } while (0)
