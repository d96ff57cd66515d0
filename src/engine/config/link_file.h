// The file `nn-train --measure-link FILE` writes and `--link FILE` reads: a link's latency and
// bandwidth as fitted to collectives timed between the ranks of an mpirun job (model/link_model.h
// fits them; distributed/link_measurement.h times them), with the timings themselves so that a
// reader can judge the fit. JSON:
//   {"format": "nn-link", "version": 1, "latency_s": 5.1e-05, "bytes_per_s": 1.1e+09,
//    "ranks": 2, "source": "measured by nn-train --measure-link on ...",
//    "samples": [{"op": "all_reduce", "bytes": 4096, "seconds": 0.00012}, ...]}
#pragma once

#include <string>
#include <vector>

namespace nn {

// One timed collective: "all_reduce", "all_gather" or "reduce_scatter" of `bytes` in all (the
// whole vector, or the whole gathered result) over the ranks; `seconds` the slowest rank's.
struct LinkSample {
  std::string op;
  double bytes = 0.0;
  double seconds = 0.0;
};

struct LinkFile {
  double latency_s = 0.0;    // per hop
  double bytes_per_s = 0.0;  // bus bandwidth
  int ranks = 0;             // of the job that measured it
  std::string source;
  std::vector<LinkSample> samples;
};

// Writes `link` atomically; IoError with the reason when it cannot.
void write_link_file(const std::string& path, const LinkFile& link);
// Reads a file written by write_link_file. IoError when it cannot be read; ConfigError naming
// the file and the JSON path of what is missing or wrong (latency must be >= 0, bandwidth > 0).
LinkFile read_link_file(const std::string& path);

}  // namespace nn
