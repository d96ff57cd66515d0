// Link presets and ring-collective times (see link_model.h).
#include "model/link_model.h"

#include <cctype>

#include "core/error.h"

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

double all_reduce_seconds(const LinkModel& link, double bytes, int ranks) {
  if (ranks <= 1 || bytes <= 0.0) return 0.0;
  const double p = ranks;
  return 2.0 * (p - 1.0) * link.latency_s + 2.0 * (p - 1.0) / p * bytes / link.bytes_per_s;
}

double all_gather_seconds(const LinkModel& link, double bytes, int ranks) {
  if (ranks <= 1 || bytes <= 0.0) return 0.0;
  const double p = ranks;
  return (p - 1.0) * link.latency_s + (p - 1.0) / p * bytes / link.bytes_per_s;
}

}  // namespace nn
