// Checkpoint files on disk (see checkpoint_files.h).
#include "train/checkpoint_files.h"

#include <filesystem>

namespace nn {
namespace fs = std::filesystem;

std::string newest_checkpoint(const std::string& checkpoint_name, uint64_t* epoch_out) {
  const fs::path prefix(checkpoint_name);
  fs::path dir = prefix.parent_path();
  if (dir.empty()) dir = ".";
  const std::string stem = prefix.filename().string();
  std::string best;
  uint64_t best_epoch = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= stem.size() + 3 || name.compare(0, stem.size(), stem) != 0 ||
        name.compare(name.size() - 3, 3, ".nc") != 0)
      continue;
    const std::string digits = name.substr(stem.size(), name.size() - stem.size() - 3);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const uint64_t e = std::stoull(digits);
    if (best.empty() || e > best_epoch) {
      // Spelled as the user gave the prefix ("ck" => "ck3.nc", not "./ck3.nc").
      best = prefix.has_parent_path() ? entry.path().string() : name;
      best_epoch = e;
    }
  }
  if (epoch_out) *epoch_out = best_epoch;
  return best;
}

std::string with_checkpoint_note(std::string message, const std::string& checkpoint) {
  const size_t generic = message.find(" The last checkpoint");
  if (generic != std::string::npos) message.erase(generic);
  if (checkpoint.empty()) return message + " No checkpoint was written before it.";
  return message + " The last checkpoint, " + checkpoint + ", is intact.";
}

}  // namespace nn
