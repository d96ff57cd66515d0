// Link presets and ring-collective times (see link_model.h).
#include "model/link_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>
#include <utility>

#include "core/error.h"
#include "core/format.h"

namespace nn {

const std::vector<LinkModel>& link_presets() {
  // Bus bandwidths of large messages and per-hop latencies. The GPU figures are nccl-tests'
  // all_reduce_perf results as published for these systems; the network ones are line rates
  // less protocol overhead, with typical MPI/TCP small-message latencies.
  static const std::vector<LinkModel> presets = {
      {"nvlink-h100", 3e-6, 460e9,
       "8 x H100 SXM5 over NVSwitch (NVLink 4): nccl-tests all_reduce_perf bus bandwidth "
       "460-480 GB/s for large messages; a few microseconds per hop"},
      {"ib-ndr", 5e-6, 45e9,
       "InfiniBand NDR, 400 Gbit/s per rank (one HCA per GPU): 50 GB/s line rate, about 45 GB/s "
       "bus bandwidth across hosts; about 5 microseconds per hop with GPUDirect RDMA"},
      {"pcie-h100", 5e-6, 40e9,
       "8 x H100 PCIe without NVLink: nccl-tests bus bandwidth 35-45 GB/s (PCIe Gen5 through "
       "the host)"},
      {"eth-10g", 50e-6, 1.15e9,
       "10 Gbit/s Ethernet, MPI over TCP: 1.25 GB/s line rate, about 1.15 GB/s after TCP/IP "
       "headers; about 50 microseconds per small message"},
      {"eth-1g", 100e-6, 0.117e9,
       "1 Gbit/s Ethernet, MPI over TCP: 125 MB/s line rate, about 117 MB/s after headers; about "
       "100 microseconds per small message"},
  };
  return presets;
}

LinkModel link_preset(const std::string& name) {
  std::string want, names;
  for (char c : name) want += char(std::tolower(static_cast<unsigned char>(c)));
  for (const LinkModel& l : link_presets()) {
    if (l.name == want) return l;
    names += (names.empty() ? "" : ", ") + l.name;
  }
  throw ConfigError("link \"" + name + "\": expected one of " + names);
}

LinkModel resolve_link(const std::string& name_or_file) {
  std::error_code ec;
  const bool file =
      name_or_file.find('/') != std::string::npos ||
      (name_or_file.size() > 5 && name_or_file.compare(name_or_file.size() - 5, 5, ".json") == 0) ||
      std::filesystem::is_regular_file(name_or_file, ec);
  if (!file) return link_preset(name_or_file);
  const LinkFile f = read_link_file(name_or_file);
  LinkModel l;
  l.name = name_or_file;
  l.latency_s = f.latency_s;
  l.bytes_per_s = f.bytes_per_s;
  l.source = f.source.empty() ? "measured (" + name_or_file + ")" : f.source;
  l.samples = f.samples;
  l.samples_ranks = f.ranks;
  return l;
}

namespace {

// The ring formulas' coefficients of the latency and of bytes / bandwidth for one sample.
bool ring_terms(const LinkSample& s, int ranks, double& hops, double& share) {
  const double p = ranks;
  double k = 0.0;
  if (s.op == "all_reduce")
    k = 2.0;
  else if (s.op == "all_gather" || s.op == "reduce_scatter")
    k = 1.0;
  else
    return false;
  hops = k * (p - 1.0);
  share = k * (p - 1.0) / p * s.bytes;
  return true;
}

}  // namespace

LinkModel fit_link(const std::vector<LinkSample>& samples, int ranks) {
  if (ranks < 2) throw ConfigError("a link is measured between at least 2 ranks");
  std::set<double> sizes;
  for (const LinkSample& s : samples) {
    double hops = 0, share = 0;
    if (s.seconds > 0 && ring_terms(s, ranks, hops, share)) sizes.insert(s.bytes);
  }
  if (sizes.size() < 2) throw ConfigError("a link fit needs collectives of at least two sizes");
  // Latency: the smallest messages' time per hop (their bytes take next to nothing); bandwidth:
  // the largest messages' bytes over their time less that latency.
  double latency = 0, small = 0, moved = 0, spent = 0;
  for (const LinkSample& s : samples) {
    double hops = 0, share = 0;
    if (!(s.seconds > 0) || !ring_terms(s, ranks, hops, share)) continue;
    if (s.bytes == *sizes.begin()) {
      latency += s.seconds / hops;
      ++small;
    }
  }
  latency /= std::max(small, 1.0);
  for (const LinkSample& s : samples) {
    double hops = 0, share = 0;
    if (!(s.seconds > 0) || !ring_terms(s, ranks, hops, share) || s.bytes != *sizes.rbegin())
      continue;
    moved += share;
    spent += std::max(s.seconds - hops * latency, 0.0);
  }
  if (!(moved > 0) || !(spent > 0))
    throw ConfigError("the timed collectives do not fit a positive bandwidth");
  LinkModel l;
  l.name = "measured";
  l.latency_s = latency;
  l.bytes_per_s = moved / spent;
  l.source = format("latency from the %.0f-byte and bandwidth from the %.0f-byte collectives",
                    *sizes.begin(), *sizes.rbegin());
  l.samples = samples;
  l.samples_ranks = ranks;
  return l;
}

namespace {

// The measured time of `op` for `bytes` over the link's own ranks; < 0 when not measured.
double measured_seconds(const LinkModel& link, const char* op, double bytes) {
  std::vector<std::pair<double, double>> points;  // bytes, seconds
  for (const LinkSample& s : link.samples)
    if (s.op == op && s.seconds > 0) points.push_back({s.bytes, s.seconds});
  if (points.empty()) return -1.0;
  std::sort(points.begin(), points.end());
  if (bytes <= points.front().first) return points.front().second;
  for (size_t i = 1; i < points.size(); ++i) {
    const auto& [b0, t0] = points[i - 1];
    const auto& [b1, t1] = points[i];
    if (bytes <= b1) return t0 + (t1 - t0) * (bytes - b0) / std::max(b1 - b0, 1.0);
  }
  // Beyond the largest: at the last segment's bandwidth (or the fitted one when it is flat).
  const auto& [bl, tl] = points.back();
  double slope = 1.0 / link.bytes_per_s;
  if (points.size() > 1) {
    const auto& [bp, tp] = points[points.size() - 2];
    if (tl > tp && bl > bp) slope = (tl - tp) / (bl - bp);
  }
  return tl + (bytes - bl) * slope;
}

double ring_seconds(const LinkModel& link, const char* op, double k, double bytes, int ranks) {
  if (ranks <= 1 || bytes <= 0.0) return 0.0;
  if (ranks == link.samples_ranks) {
    const double t = measured_seconds(link, op, bytes);
    if (t >= 0) return t;
  }
  const double p = ranks;
  return k * (p - 1.0) * link.latency_s + k * (p - 1.0) / p * bytes / link.bytes_per_s;
}

}  // namespace

double all_reduce_seconds(const LinkModel& link, double bytes, int ranks) {
  return ring_seconds(link, "all_reduce", 2.0, bytes, ranks);
}

double all_gather_seconds(const LinkModel& link, double bytes, int ranks) {
  return ring_seconds(link, "all_gather", 1.0, bytes, ranks);
}

double reduce_scatter_seconds(const LinkModel& link, double bytes, int ranks) {
  return ring_seconds(link, "reduce_scatter", 1.0, bytes, ranks);
}

}  // namespace nn
