#!/usr/bin/env bash
# Rebuilds every golden dataset file (<case>.nc, bad/<case>.nc) from its hand-written CDL text with
# ncgen (Debian package netcdf-bin). NETCDF4 format, as DSSTNE's writers create through
# netCDF-C++ (whose default file format is netCDF-4). Run after editing a .cdl; the unit test
# GoldenNetcdfFiles.CommittedFilesMatchTheirCdl fails while a .nc is stale.
# Usage: bash tests/data/netcdf/regenerate.sh
set -euo pipefail

cd "$(dirname "$0")"
command -v ncgen >/dev/null || { echo "regenerate.sh: ncgen not found (install netcdf-bin)" >&2; exit 1; }
shopt -s nullglob
count=0
for cdl in *.cdl bad/*.cdl; do
  ncgen -k nc4 -o "${cdl%.cdl}.nc" "$cdl"
  count=$((count + 1))
done
# A .nc whose .cdl was deleted would otherwise linger as an untested golden file.
for nc in *.nc bad/*.nc; do
  [[ -e ${nc%.nc}.cdl ]] || { echo "regenerate.sh: $nc has no .cdl; remove it" >&2; exit 1; }
done
echo "regenerated $count files"
