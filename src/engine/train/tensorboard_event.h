// The events of a TensorBoard event file as nn-train writes and reads them back: scalars at a
// step, the file-version marker that opens a file, and the hparams plugin's session records
// (the run's hyper-parameters, and its end). Encoded with Debian's protobuf from the schema in
// train/tensorboard_records.proto; the framing around each event is train/tf_record.h's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace nn {

struct TensorBoardScalar {
  std::string tag;  // "train/loss", "validation/recall@10", ...
  float value = 0;  // TensorBoard keeps scalars as 32-bit floats
};

// One hyper-parameter: a number, a string or a truth value.
struct HyperParameter {
  std::string name;
  std::variant<double, std::string, bool> value;
};

// The first event of a file: TensorBoard reads the version ("brain.Event:2") and then trusts
// steps as written (no guessing at restarts from steps that go back).
std::string file_version_event(double wall_time);
std::string scalars_event(double wall_time, int64_t step,
                          const std::vector<TensorBoardScalar>& scalars);
// The hparams plugin's record of a run's start, at step 0: its hyper-parameters in the order
// given, and when it started.
std::string hparams_start_event(double wall_time, double start_time,
                                const std::vector<HyperParameter>& hparams);
// The record of a run's end: successful or failed.
std::string hparams_end_event(double wall_time, bool success);

// An event as read back from a file.
struct ParsedEvent {
  enum class Kind { FileVersion, Scalars, Other };
  Kind kind = Kind::Other;
  double wall_time = 0;
  int64_t step = 0;
  std::vector<TensorBoardScalar> scalars;  // Kind::Scalars: its simple values
};
// nullopt when the bytes are not an event.
std::optional<ParsedEvent> parse_event(std::string_view payload);

}  // namespace nn
