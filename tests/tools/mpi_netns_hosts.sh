#!/usr/bin/env bash
# scripts/mpi-netns-check.sh in the suite: two network namespaces as two "hosts", one MPI rank in
# each over TCP, must train and predict exactly what one process does. It needs root, iproute2
# and Open MPI, and a sandbox that allows network namespaces; elsewhere it is skipped (exit 77,
# CTest SKIP_RETURN_CODE) with the reason printed, never passed without having run.
# Usage: mpi_netns_hosts.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
src=$2
skip() {
  echo "SKIP: $*"
  exit 77
}
[[ $(id -u) == 0 ]] || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip (iproute2)"
command -v mpirun >/dev/null || skip "no mpirun (openmpi-bin)"
timeout 300 bash "$src/scripts/mpi-netns-check.sh" "$tools"
