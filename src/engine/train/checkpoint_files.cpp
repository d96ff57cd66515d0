// Checkpoint files on disk (see checkpoint_files.h).
#include "train/checkpoint_files.h"

#include <algorithm>
#include <filesystem>
#include <optional>

namespace nn {
namespace fs = std::filesystem;
namespace {

// A run of decimal digits that fits 64 bits (no sign, no blanks); nullopt otherwise.
std::optional<uint64_t> number(const std::string& digits) {
  if (digits.empty() || digits.size() > 19 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoull(digits);
}

// The state a file name after the prefix stands for: "<E>.nc", "<E>_<B>.nc" or ".nc<E>.nc".
std::optional<CheckpointFile> parse(const std::string& rest) {
  if (rest.size() < 4 || rest.compare(rest.size() - 3, 3, ".nc") != 0) return std::nullopt;
  std::string body = rest.substr(0, rest.size() - 3);
  CheckpointFile f;
  if (body.compare(0, 3, ".nc") == 0) {
    f.old_name = true;
    body.erase(0, 3);
  }
  const size_t underscore = body.find('_');
  const auto epoch = number(body.substr(0, underscore));
  if (!epoch) return std::nullopt;
  f.epoch = *epoch;
  if (underscore != std::string::npos) {
    const auto batch = number(body.substr(underscore + 1));
    if (f.old_name || !batch || *batch == 0) return std::nullopt;
    f.batch = *batch;
  }
  return f;
}

}  // namespace

std::string checkpoint_file_name(const std::string& name, uint64_t epoch, uint64_t batch) {
  return name + std::to_string(epoch) + (batch > 0 ? "_" + std::to_string(batch) : "") + ".nc";
}

std::vector<CheckpointFile> list_checkpoints(const std::string& name) {
  const fs::path prefix(name);
  fs::path dir = prefix.parent_path();
  if (dir.empty()) dir = ".";
  const std::string stem = prefix.filename().string();
  std::vector<CheckpointFile> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.size() <= stem.size() || file.compare(0, stem.size(), stem) != 0) continue;
    auto f = parse(file.substr(stem.size()));
    if (!f) continue;
    std::error_code type_ec;
    if (entry.is_directory(type_ec)) continue;
    // Spelled as the user gave the prefix ("ck" => "ck3.nc", not "./ck3.nc").
    f->path = prefix.has_parent_path() ? entry.path().string() : file;
    found.push_back(*f);
  }
  std::sort(found.begin(), found.end(), [](const CheckpointFile& a, const CheckpointFile& b) {
    if (a.epoch != b.epoch) return a.epoch > b.epoch;
    if (a.batch != b.batch) return a.batch > b.batch;
    if (a.old_name != b.old_name) return !a.old_name;
    return a.path < b.path;
  });
  return found;
}

std::string newest_checkpoint(const std::string& checkpoint_name, uint64_t* epoch_out) {
  const std::vector<CheckpointFile> all = list_checkpoints(checkpoint_name);
  if (epoch_out) *epoch_out = all.empty() ? 0 : all.front().epoch;
  return all.empty() ? std::string() : all.front().path;
}

std::string with_checkpoint_note(std::string message, const std::string& checkpoint) {
  const size_t generic = message.find(" The last checkpoint");
  if (generic != std::string::npos) message.erase(generic);
  if (checkpoint.empty()) return message + " No checkpoint was written before it.";
  return message + " The last checkpoint, " + checkpoint + ", is intact.";
}

}  // namespace nn
