#!/usr/bin/env bash
# Streaming nn-generate benchmark (docs/large-datasets.md): writes a synthetic text dataset of
# EXAMPLES lines with ITEMS_PER distinct items each out of ITEMS (indicator data), converts it
# with nn-generate and reports lines per second, the output's size and the peak resident memory.
# The issue's target is the default: 20 million examples x 50 items over 100,000 items (about
# 7.5 GB of text and a 4 GB NetCDF file; check `df -h` first).
# Usage: scripts/bench_generate.sh [WORK_DIR] [-- extra nn-generate flags]
#   EXAMPLES=20000000 ITEMS_PER=50 ITEMS=100000 NN_BUILD=build KEEP=0
#   NN_GENERATE=path/to/nn-generate (another build's, e.g. to compare with one before streaming)
#   ORDER=reversed: convert with a sample index that numbers the lines backwards, so every
#   example is out of sample index order (put in order through a temporary file beside out.nc)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/nn-bench-generate}
shift $(($# > 0 ? 1 : 0))
[[ ${1:-} == -- ]] && shift
examples=${EXAMPLES:-20000000}
items_per=${ITEMS_PER:-50}
items=${ITEMS:-100000}
tool=${NN_GENERATE:-$here/${NN_BUILD:-build}/src/tools/nn-generate}
[[ -x $tool ]] || { echo "bench_generate: build nn-generate first ($tool)" >&2; exit 1; }
((items_per <= items)) || { echo "bench_generate: ITEMS_PER > ITEMS" >&2; exit 1; }
mkdir -p "$work"
cd "$work"

# The text: a small C program (awk takes minutes per billion items). Each line is a user and
# ITEMS_PER distinct items (a random start and a random stride coprime with ITEMS).
input=examples_${examples}x${items_per}of${items}.txt
if [[ ! -s $input ]]; then
  cat >gen.c <<'C'
#include <stdio.h>
#include <stdlib.h>
static unsigned long long s = 88172645463325252ull;
static unsigned long long next(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }
static unsigned long long gcd(unsigned long long a, unsigned long long b) {
  while (b) { unsigned long long t = a % b; a = b; b = t; } return a; }
int main(int argc, char** argv) {
  const unsigned long long n = strtoull(argv[1], 0, 10), per = strtoull(argv[2], 0, 10),
                           items = strtoull(argv[3], 0, 10);
  static char buf[1 << 20];
  setvbuf(stdout, buf, _IOFBF, sizeof buf);
  for (unsigned long long i = 0; i < n; ++i) {
    unsigned long long start = next() % items, stride = 1 + next() % (items - 1);
    while (gcd(stride, items) != 1) stride = 1 + next() % (items - 1);
    printf("u%llu\t", i);
    for (unsigned long long k = 0; k < per; ++k)
      printf(k ? ":i%llu" : "i%llu", (start + k * stride) % items);
    putchar('\n');
  }
  return 0;
}
C
  cc -O2 -o gen gen.c
  echo "bench_generate: writing $input ..."
  t0=$(date +%s.%N)
  ./gen "$examples" "$items_per" "$items" >"$input.part"
  mv "$input.part" "$input"
  echo "bench_generate: text written in $(echo "$(date +%s.%N) - $t0" | bc) s"
fi
text_bytes=$(stat -c %s "$input")

rm -f out.nc features.idx samples.idx
if [[ ${ORDER:-} == reversed ]]; then
  awk -v n="$examples" 'BEGIN { for (i = 0; i < n; i++) print "u" i "\t" (n - 1 - i) }' >samples.idx
  echo "bench_generate: samples.idx numbers the $examples lines backwards (out of order)"
fi
echo "bench_generate: load before: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tool" "$input" "$examples" "$text_bytes" "$@" <<'PY'
import os, resource, subprocess, sys, time
tool, path, examples, text_bytes, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
cmd = [tool, "-d", "input", "-i", path, "-o", "out.nc", "-f", "features.idx", "-s", "samples.idx", "-c"] + extra
print("bench_generate: " + " ".join(cmd), flush=True)
t0 = time.time()
r = subprocess.run(cmd)
wall = time.time() - t0
if r.returncode != 0:
    sys.exit("bench_generate: nn-generate failed with status %d" % r.returncode)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
size = os.path.getsize("out.nc")
print("bench_generate: %d lines (%.2f GB of text) in %.1f s: %.0f lines/s, %.1f MB/s of text"
      % (examples, text_bytes / 1e9, wall, examples / wall, text_bytes / wall / 1e6))
print("bench_generate: out.nc %.2f GB; peak resident memory %.0f MiB" % (size / 1e9, peak / 2**20))
PY
echo "bench_generate: load after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ ${KEEP:-0} != 1 ]]; then rm -f out.nc; fi
