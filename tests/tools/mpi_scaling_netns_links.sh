#!/usr/bin/env bash
# The links of scripts/check_scaling_netns.sh in the suite (--dry-run: no training, about 15 s):
# two network namespaces whose link is shaped to 1 Gbit/s with 200 us each way and to 10 Gbit/s
# with 50 us, and loopback; each must show its delay to a TCP probe and to an MPI ping-pong
# between a rank in each namespace, stay under its rate, and carry the ping-pong's bytes. The
# comparison of --plan with training runs is the long check itself (docs/scaling.md). Needs
# root, iproute2, Open MPI with mpicc and a C compiler; elsewhere the script exits 77 with the
# reason (CTest SKIP_RETURN_CODE).
# Usage: mpi_scaling_netns_links.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
src=$2
NN_TOOLS=$tools timeout 300 bash "$src/scripts/check_scaling_netns.sh" --dry-run
