// Interconnects as alpha-beta models, for the scaling cost model (train/scaling_plan.h).
//
// A hop of b bytes between neighbouring ranks takes latency + b / bandwidth. Ring collectives
// over P ranks move 1/P of the data per hop: an all-gather or a reduce-scatter of B bytes in all
// makes P - 1 hops, an all-reduce 2 (P - 1), so an all-reduce takes
//   2 (P - 1) latency + 2 (P - 1) / P * B / bandwidth.
// `bandwidth` is therefore what nccl-tests calls the bus bandwidth: the figure it reports for
// large messages, independent of P. Presets name common links with the figures of their source
// (docs/scaling.md, "Predicting scaling"); measured links (nn-train --measure-link, timed by
// distributed/link_measurement.h) are fitted to the same model and kept in a JSON file.
#pragma once

#include <string>
#include <vector>

#include "config/link_file.h"

namespace nn {

struct LinkModel {
  std::string name;
  double latency_s = 0.0;    // per hop
  double bytes_per_s = 0.0;  // bus bandwidth
  std::string source;        // where the figures come from
  // A measured link's timings (nn-train --measure-link) over `samples_ranks` ranks: for that
  // many ranks a collective's time is interpolated between the timings of its kind (linearly
  // in bytes; beyond the largest, at the bandwidth of the last two), which follows what the
  // MPI library really does at each size better than one latency and one bandwidth.
  std::vector<LinkSample> samples;
  int samples_ranks = 0;
};

// The named links, in a fixed order (fastest first).
const std::vector<LinkModel>& link_presets();
// The preset called `name` (case-insensitive); ConfigError listing the names otherwise.
LinkModel link_preset(const std::string& name);
// A preset's name, or the path of a file written by write_link_file (a name with a '/' or
// ending in ".json", or an existing file). ConfigError naming the file and what is wrong.
LinkModel resolve_link(const std::string& name_or_file);

// The latency and bandwidth of `samples` over `ranks` ranks with this file's ring formulas: the
// latency from the smallest messages, the bandwidth from the largest (less their latency).
// ConfigError when there are fewer than two sizes or no positive bandwidth explains them.
LinkModel fit_link(const std::vector<LinkSample>& samples, int ranks);

// Seconds of one collective over `ranks` ranks; `bytes` is the whole vector (all-reduce) or the
// whole gathered result (all-gather, reduce-scatter). 0 for one rank or no bytes.
double all_reduce_seconds(const LinkModel& link, double bytes, int ranks);
double all_gather_seconds(const LinkModel& link, double bytes, int ranks);
double reduce_scatter_seconds(const LinkModel& link, double bytes, int ranks);

}  // namespace nn
