// Interconnects as alpha-beta models, for the scaling cost model (train/scaling_plan.h).
//
// A hop of b bytes between neighbouring ranks takes latency + b / bandwidth. Ring collectives
// over P ranks move 1/P of the data per hop: an all-gather or a reduce-scatter of B bytes in all
// makes P - 1 hops, an all-reduce 2 (P - 1), so an all-reduce takes
//   2 (P - 1) latency + 2 (P - 1) / P * B / bandwidth.
// `bandwidth` is therefore what nccl-tests calls the bus bandwidth: the figure it reports for
// large messages, independent of P. Presets name common links with the figures of their source
// (docs/scaling.md, "Predicting scaling").
#pragma once

#include <string>
#include <vector>

namespace nn {

struct LinkModel {
  std::string name;
  double latency_s = 0.0;    // per hop
  double bytes_per_s = 0.0;  // bus bandwidth
  std::string source;        // where the figures come from
};

// The named links, in a fixed order (fastest first).
const std::vector<LinkModel>& link_presets();
// The preset called `name` (case-insensitive); ConfigError listing the names otherwise.
LinkModel link_preset(const std::string& name);

// Seconds of one collective over `ranks` ranks; `bytes` is the whole vector (all-reduce) or the
// whole gathered result (all-gather, reduce-scatter). 0 for one rank or no bytes.
double all_reduce_seconds(const LinkModel& link, double bytes, int ranks);
double all_gather_seconds(const LinkModel& link, double bytes, int ranks);

}  // namespace nn
