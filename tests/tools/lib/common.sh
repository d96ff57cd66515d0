# Set-up shared by the tool tests (sourced): a scratch directory removed on exit, fail(), status
# checks, and the tiny recommendation data (30 users, 3 tastes of 6 items) that several scripts
# train on.

# Script tests that cannot run (no mpirun, not root, ...) print why and exit 77, which CTest
# reports as Skipped (SKIP_RETURN_CODE), never as passed; tests/structure/skip_codes.py checks it.

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Creates a scratch directory ($work), removes it when the script exits, and enters it.
enter_work_dir() {
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cd "$work"
}

require_netcdf_bin() {
  command -v ncdump >/dev/null && command -v ncgen >/dev/null ||
    fail "needs ncdump and ncgen (netcdf-bin)"
}

# expect_status STATUS args...: runs "$tool" (set by the script) expecting exit STATUS; its stderr
# is kept in err.txt.
expect_status() {
  local want=$1 got=0
  shift
  "$tool" "$@" 2>err.txt || got=$?
  [[ $got == "$want" ]] || fail "$(basename "$tool") $* exited $got, expected $want: $(cat err.txt)"
}

# tiny_ratings [analog]: ratings.txt, 30 users with 3 tastes of 6 items; with `analog` every
# entry carries a value (1 + item mod 5).
tiny_ratings() {
  awk -v analog="${1:-}" 'BEGIN { for (u = 0; u < 30; u++) { t = u % 3; line = "u" u "\t";
       for (j = 0; j < 6; j++) if ((u + j) % 4 != 0)
         line = line "m" (t * 6 + j) (analog == "analog" ? "," (1 + j % 5) : "") ":";
       print substr(line, 1, length(line) - 1) } }' >ratings.txt
}

# tiny_datasets TOOL_DIR: ratings.txt -> input.nc (indicator) and output.nc, with features.idx
# and samples.idx.
tiny_datasets() {
  "$1/nn-generate" -d input -i ratings.txt -o input.nc -f features.idx -s samples.idx -c 2>/dev/null
  "$1/nn-generate" -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx 2>/dev/null
}

# tiny_config [N] [ACTIVATION]: config.json, a sparse autoencoder with one hidden layer (default
# 8 Sigmoid units).
tiny_config() {
  cat >config.json <<JSON
{ "Name": "tiny", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": ${1:-8}, "Activation": "${2:-Sigmoid}" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid" } ] }
JSON
}

# hdf5_bytes FILE: the size of the HDF5 image at the start of a file the tools wrote, before its
# checksum trailer (docs/reliability.md); the whole size for a file without one.
hdf5_bytes() {
  python3 -c 'import sys; d = open(sys.argv[1], "rb").read()
print(int.from_bytes(d[-32:-24], "little") if d[-40:-32] == b"NN-CSUM1" else len(d))' "$1"
}

# peak_kib command...: runs the command (its standard output discarded) and prints its peak
# resident memory in KiB (Python's getrusage: GNU time is not on a minimal Debian).
peak_kib() {
  python3 -c '
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if r.returncode != 0:
    sys.exit("failed: " + " ".join(sys.argv[1:]) + ": " + r.stderr.decode())
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}
