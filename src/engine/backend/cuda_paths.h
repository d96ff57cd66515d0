// The CUDA backend's paths and whether each has passed on a GPU: the one table that decides what
// `--backend cuda` runs by default (docs/cuda-backend.md, "Paths and their switches", shows the
// same table; a test keeps the two equal).
//
// Why: GPU time comes rarely. Code that has only been compiled must not be what a user with a GPU
// gets by default, so every path added since the last GPU run that passed is opt-in, with a
// switch, and the default is the path that passed. The GPU check (scripts/gpu_check) switches
// each path away from its default (an opt-in path on, a default path off) and judges the two
// against each other. When a GPU run passes a path, flipping it to the default is a one-line
// change here: `on_by_default` true and `passed` naming that run. The run of 2026-12-04 on an
// H200 passed every path; all but row-sparse updates (slower there than dense updates) became
// the default.
//
// Header only: read by the engine (row-sparse updates, evaluators' peer backends) and by the CUDA
// module (everything inside the backend), which must agree on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/error.h"

namespace nn {

enum class CudaPath {
  PaddedRows,            // output rows padded to 8 floats
  SideUploads,           // each step's minibatch copied on a second stream
  BiasEpilogue,          // z = xW + b as one cuBLASLt product with a bias epilogue
  MultiTensorOptimizer,  // every dense parameter array updated by one launch
  SyncFreeSparseLoss,    // no wait for the device after the loss of sparse targets
  PresortedTargets,      // sparse targets with ascending rows skip the device sort
  RowSparseUpdates,      // sparse input matrices updated row by row (--sparse-update Exact)
  PeerBackends,          // one backend (stream, scratch) per evaluator thread (nn-serve)
  Graphs,                // training steps recorded and launched as CUDA graphs
};

struct CudaPathInfo {
  CudaPath path;
  const char* name;      // as in docs and logs
  const char* variable;  // the environment variable that switches it
  const char* on;        // the variable's value that turns it on
  const char* off;       // ... and off
  bool on_by_default;    // true only for a path that passed on a GPU (`passed`)
  const char* passed;    // the saved GPU results that passed it (docs/gpu-results/, no spaces)
  const char* added;     // the commit that added it
  const char* what;
};

// The table. Flip `on_by_default` only with `passed` citing the run (docs/gpu-results/).
inline const std::vector<CudaPathInfo>& cuda_paths() {
  static const std::vector<CudaPathInfo> table = {
      {CudaPath::PaddedRows, "padded-rows", "NN_CUDA_ROW_ALIGN", "8", "1", true,
       "2026-12-04-h200-call1", "c604b07",
       "an output layer's rows padded to a multiple of 8 floats (27,278 -> 27,280)"},
      {CudaPath::SideUploads, "side-uploads", "NN_CUDA_SIDE_UPLOADS", "1", "0", true,
       "2026-12-04-h200-call1", "f5ca4ce",
       "each step's inputs and targets copied on a second stream beside the step"},
      {CudaPath::BiasEpilogue, "bias-epilogue", "NN_CUDA_BIAS_EPILOGUE", "1", "0", true,
       "2026-12-04-h200-call1", "e919cbd",
       "z = xW + b as one cuBLASLt product with a bias epilogue"},
      {CudaPath::MultiTensorOptimizer, "multi-tensor-optimizer", "NN_CUDA_MULTI_TENSOR", "1", "0",
       true, "2026-12-04-h200-call1", "99fad98",
       "every dense parameter array updated by one kernel launch"},
      {CudaPath::SyncFreeSparseLoss, "sync-free-sparse-loss", "NN_CUDA_SYNC_FREE_LOSS", "1", "0",
       true, "2026-12-04-h200-call1", "8712a44",
       "no wait for the device after the loss of sparse targets (bad indices refused on the host)"},
      {CudaPath::PresortedTargets, "presorted-targets", "NN_CUDA_PRESORTED", "1", "0", true,
       "2026-12-04-h200-call1", "bb2a448",
       "sparse targets whose rows are ascending skip the device sort"},
      {CudaPath::RowSparseUpdates, "row-sparse-updates", "NN_CUDA_ROW_SPARSE", "1", "0", false,
       "2026-12-04-h200-call1",  // passed, but slower there (0.53x and 0.70x: call2-bench.jsonl)
       "b7f46dc",
       "sparse input matrices updated row by row (--sparse-update Exact; grouped gradient)"},
      {CudaPath::PeerBackends, "peer-backends", "NN_CUDA_PEER_BACKENDS", "1", "0", true,
       "2026-12-04-h200-call1", "a3c36cc",
       "a backend of its own (stream, scratch) for each evaluator thread (nn-serve)"},
      {CudaPath::Graphs, "graphs", "NN_CUDA_GRAPHS", "1", "0", true, "2026-12-04-h200-call1",
       "81d8357", "training steps recorded and launched as CUDA graphs"},
  };
  return table;
}

inline const CudaPathInfo& cuda_path_info(CudaPath path) {
  for (const CudaPathInfo& p : cuda_paths())
    if (p.path == path) return p;
  throw InternalError("cuda_path_info: a path missing from the table");
}

// The CUDA row alignment the table and NN_CUDA_ROW_ALIGN ask for: a count of floats from 1 to
// 4096 (ConfigError otherwise, naming the variable); unset: 8 when padded rows are on by default,
// else 1.
inline uint32_t cuda_row_alignment_setting() {
  const CudaPathInfo& p = cuda_path_info(CudaPath::PaddedRows);
  return row_alignment_from_env(p.variable, uint32_t(std::atoi(p.on_by_default ? p.on : p.off)));
}

// Whether `path` is on in this process: its variable's `on` or `off` value when set, else the
// table's default. Any other value is a ConfigError naming the variable and both values. (Padded
// rows: on when the row alignment is above 1.)
inline bool cuda_path_on(CudaPath path) {
  if (path == CudaPath::PaddedRows) return cuda_row_alignment_setting() > 1;
  const CudaPathInfo& p = cuda_path_info(path);
  const char* text = std::getenv(p.variable);
  if (!text || !*text) return p.on_by_default;
  if (std::strcmp(text, p.on) == 0) return true;
  if (std::strcmp(text, p.off) == 0) return false;
  throw ConfigError(std::string(p.variable) + "=" + text + ": expected " + p.on + " (" + p.name +
                    " on) or " + p.off + " (off)");
}

// One line per path that is on here although no GPU run has passed it yet, for logs
// ("side-uploads is on (NN_CUDA_SIDE_UPLOADS=1) and has not yet passed on a GPU").
// (`table` is the code's; a test passes one of its own.)
inline std::vector<std::string> cuda_untried_paths_on(
    const std::vector<CudaPathInfo>& table = cuda_paths()) {
  std::vector<std::string> lines;
  for (const CudaPathInfo& p : table) {
    if (*p.passed || !cuda_path_on(p.path)) continue;
    const char* value = std::getenv(p.variable);
    lines.push_back(std::string(p.name) + " is on (" + p.variable + "=" +
                    (value && *value ? value : p.on) + ") and has not yet passed on a GPU");
  }
  return lines;
}

}  // namespace nn
