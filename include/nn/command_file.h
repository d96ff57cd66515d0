// Public API: a CDL command file (DSSTNE's JSON "Command Definition Language": Command, Network,
// Data, RandomSeed, TrainingParameters or PredictionParameters; docs/config-reference.md), read
// and checked once. Training and prediction jobs are made from it (nn/train_job.h,
// nn/predict_job.h), so a command file means the same run in every front end.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace nn::api {

class CommandFile {
 public:
  // Reads and checks `path`; ConfigError names the file and the JSON path at fault.
  static CommandFile read(const std::string& path);

  const std::string& path() const;
  std::string command() const;                   // "Train", "Predict" or "Validate"
  std::optional<uint64_t> random_seed() const;   // RandomSeed (absent or -1: nullopt)
  std::optional<uint64_t> memory_limit() const;  // MemoryLimit in bytes
  std::string backend() const;                   // Backend ("" when absent)
  std::optional<int> device() const;             // Device

  struct Impl;  // the engine's parsed command file (src/engine/api/command_file_impl.h)
  const Impl& impl() const { return *impl_; }

 private:
  explicit CommandFile(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace nn::api
