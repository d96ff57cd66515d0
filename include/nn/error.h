// Public API: the typed errors the library throws (it never prints or exits). Every message says
// where the problem is: the file, JSON path, NetCDF variable, line, layer or argument at fault.
// The engine's own code includes these through core/error.h; they are the same types.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace nn {

// Base of every library error.
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

// Internal invariant violated: a bug in the library, not in the user's input.
class InternalError : public Error {
 public:
  using Error::Error;
};

// A job's settings contradict each other or the data they name ("--split 0.01 leaves no images
// for train.nc"). The tools report it like a command-line mistake (exit status 2).
class ArgumentError : public Error {
 public:
  using Error::Error;
};

// A job stopped because a stop was requested (nn/stop.h: the tools request one on SIGTERM and
// SIGINT): "stopped by SIGTERM in epoch 4 after minibatch 17 of 40; saved ck3_17.nc". Nothing
// partial was written. `checkpoint` names the training state saved on the way out ("" when
// none was); the tools exit with 128 + signal().
class Interrupted : public Error {
 public:
  Interrupted(const std::string& what, int signal, std::string checkpoint = "")
      : Error(what), signal_(signal), checkpoint_(std::move(checkpoint)) {}
  int signal() const { return signal_; }
  const std::string& checkpoint() const { return checkpoint_; }

 private:
  int signal_;
  std::string checkpoint_;
};

}  // namespace nn
