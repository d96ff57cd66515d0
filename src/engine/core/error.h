// Typed exceptions thrown by the engine. The library never prints or exits; tools catch these,
// print "nn-<tool>: error: <what()>" and exit non-zero. Every message says where the problem is
// (file, JSON path, NetCDF variable, line number, or source location for backend failures).
#pragma once

#include <stdexcept>
#include <string>

namespace nn {

// Base of every engine error.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Invalid network description or command file: "<file>: <json path>: <problem>".
class ConfigError : public Error {
 public:
  using Error::Error;
};

// Invalid or unreadable data: "<file>: <variable or line>: <problem>".
class DataError : public Error {
 public:
  using Error::Error;
};

// A file could not be opened, read or written.
class IoError : public Error {
 public:
  using Error::Error;
};

// A backend (BLAS, CUDA, cuDNN, NCCL, MPI) call failed: "<file>:<line>: <call>: <reason>".
class BackendError : public Error {
 public:
  using Error::Error;
};

// Training diverged (NaN or infinite loss).
class DivergenceError : public Error {
 public:
  using Error::Error;
};

// Internal invariant violated: a bug in the engine, not in the user's input.
class InternalError : public Error {
 public:
  using Error::Error;
};

}  // namespace nn

// Throws nn::InternalError with the source location when `cond` is false.
#define NN_CHECK(cond, msg)                                                                     \
  do {                                                                                          \
    if (!(cond))                                                                                \
      throw ::nn::InternalError(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + \
                                "check failed: " #cond ": " + (msg));                           \
  } while (0)
