#!/usr/bin/env bash
# Streaming nn-generate (docs/large-datasets.md): peak memory stays flat as the input grows
# (N and 4N examples), for input in sample index order and for input out of it (a sample index
# that numbers the samples backwards: put in order through a temporary file), against runs whose
# buffers hold the whole data, which grow with it; out-of-order input gives the file its
# reordered text gives; standard input gives the file a named input gives and leaves no
# temporary file; chunked and deflated files read back with the same values; a run killed while
# it writes leaves the target as it was, and the next run removes its temporary file.
# Usage: bash generate_streaming.sh <tool-dir> <source-dir>
set -euo pipefail

tool="$(realpath "$1")/nn-generate"
source "$(dirname "$(realpath "$0")")/lib/common.sh"
require_netcdf_bin
enter_work_dir

# examples FILE LINES: LINES examples of 100 items each out of 5,000 (all of them appear in the
# first 20,000 lines, so the feature index is the same for every size).
examples() {
  awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) { line = "s" i "\t";
       for (k = 0; k < 100; k++) line = line (k ? ":" : "") "item" ((i * 13 + k * 101) % 5000);
       print line } }' >"$1"
}

# reversed_samples FILE LINES: a sample index that numbers s0..s(LINES-1) backwards, so the
# examples come out of index order.
reversed_samples() {
  awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) print "s" i "\t" (n - 1 - i) }' >"$1"
}

n=20000
examples small.txt $n
examples large.txt $((4 * n))
stream_small=$(peak_kib "$tool" -d in -i small.txt -o s.nc -f f1.idx -s s1.idx -c -q)
stream_large=$(peak_kib "$tool" -d in -i large.txt -o l.nc -f f2.idx -s s2.idx -c -q)
reversed_samples rs.idx $n
reversed_samples rl.idx $((4 * n))
cp rs.idx rs2.idx
reorder_small=$(peak_kib "$tool" -d in -i small.txt -o rs.nc -f f3.idx -s rs.idx -c -q)
reorder_large=$(peak_kib "$tool" -d in -i large.txt -o rl.nc -f f4.idx -s rl.idx -c -q)
# Buffers of 1 GiB hold all the entries of the out-of-order runs (16 bytes each while sorted).
held_small=$(peak_kib "$tool" -d in -i small.txt -o hs.nc -f f5.idx -s rs2.idx -c -q --buffer 1024)
cp rl.idx rl2.idx
held_large=$(peak_kib "$tool" -d in -i large.txt -o hl.nc -f f6.idx -s rl2.idx -c -q --buffer 1024)
stream_growth=$((stream_large - stream_small))
reorder_growth=$((reorder_large - reorder_small))
held_growth=$((held_large - held_small))
echo "peak RSS KiB: streaming $stream_small -> $stream_large (+$stream_growth);" \
  "out of order $reorder_small -> $reorder_large (+$reorder_growth);" \
  "buffers holding the data $held_small -> $held_large (+$held_growth); 6,000,000 more entries"
# Buffers that hold the 6 million extra entries grow by ~96 MB; if they do not, the inputs do
# not show anything.
((held_growth > 60000)) || fail "the run holding the data grew by only $held_growth KiB"
# Streaming holds the sample index (each label plus ~40 bytes, and 16 bytes per sample out of
# order: a few MB here) but not the entries. Under AddressSanitizer (scripts/sanitize.sh) freed
# blocks stay resident in its quarantine for a while: 15 MB more there, so it is allowed 40.
allowed=20000
ldd "$tool" 2>/dev/null | grep libasan >/dev/null && allowed=40000
for run in stream reorder; do
  growth=${run}_growth
  ((${!growth} * 4 < held_growth)) ||
    fail "$run: peak memory grew by ${!growth} KiB, holding the data by $held_growth KiB"
  ((${!growth} < allowed)) || fail "$run: peak memory grew by ${!growth} KiB for 4x input"
done
# Out of order gives what the same examples give in index order (the text reversed).
tac large.txt >large_reversed.txt
cp rl2.idx rl3.idx
"$tool" -d in -i large_reversed.txt -o ordered.nc -f f4.idx -s rl3.idx -q
cmp -s <(ncdump rl.nc | tail -n +2) <(ncdump ordered.nc | tail -n +2) ||
  fail "out-of-order input gives another file than the same examples in order"
cmp -s <(ncdump rl.nc | tail -n +2) <(ncdump hl.nc | tail -n +2) ||
  fail "the buffer size changed the file"
cmp -s rl.idx rl3.idx || fail "the sample index was rewritten"
cmp -s f1.idx f2.idx || fail "the feature index differs between the sizes"
last=$(ncdump -v sparseEnd0 l.nc | tail -n 2)
[[ $last == *" 8000000 ;"* ]] || fail "l.nc: last sparseEnd0 should be 8000000"

# Standard input: copied for the second pass into an unnamed file in TMPDIR (nothing left).
mkdir tmp
head -n 3000 small.txt >part.txt
"$tool" -d in -i part.txt -o file.nc -f pf.idx -s ps.idx -c -q
TMPDIR=$PWD/tmp "$tool" -d in -i - -o stdin.nc -f qf.idx -s qs.idx -c -q <part.txt
[[ -z $(ls -A tmp) ]] || fail "temporary files left in TMPDIR: $(ls -A tmp)"
cmp -s <(ncdump file.nc | tail -n +2) <(ncdump stdin.nc | tail -n +2) ||
  fail "standard input gives another file than the named input"
cmp -s pf.idx qf.idx && cmp -s ps.idx qs.idx || fail "index files differ for standard input"
# Out of order from standard input: two temporary files (the copy in TMPDIR, the scratch file
# beside the output), neither left.
mkdir out
TMPDIR=$PWD/tmp "$tool" -d in -i - -o out/rstdin.nc -f f3.idx -s rs.idx -q <small.txt
[[ -z $(ls -A tmp) ]] || fail "temporary files left in TMPDIR: $(ls -A tmp)"
[[ $(ls -A out) == rstdin.nc ]] || fail "left beside the output: $(ls -A out)"
cmp -s <(ncdump rs.nc | tail -n +2) <(ncdump out/rstdin.nc | tail -n +2) ||
  fail "out of order: standard input gives another file than the named input"

# Chunked and deflated: smaller, the same values.
"$tool" -d in -i part.txt -o deflate.nc -f pf.idx -s ps.idx --deflate 6 -q
[[ $(ncdump -hs deflate.nc) == *"sparseIndex0:_DeflateLevel = 6"* ]] || fail "deflate.nc not deflated"
cmp -s <(ncdump file.nc | tail -n +2) <(ncdump deflate.nc | tail -n +2) ||
  fail "the deflated file holds other values"
(($(stat -c %s deflate.nc) < $(stat -c %s file.nc))) || fail "deflate.nc is not smaller"

# Killed while writing: the target stays as it was; the named temporary file the kill leaves is
# removed by the next run. (Retried: the write must still be going on when the kill comes.)
echo previous >k.nc
caught=0
for attempt in 1 2 3; do
  "$tool" -d in -i large.txt -o k.nc -f kf.idx -s ks.idx -c --deflate 9 -q 2>/dev/null &
  pid=$!
  for _ in $(seq 2000); do
    if compgen -G '.k.nc.tmp.*' >/dev/null; then
      kill -KILL $pid
      caught=1
      break
    fi
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
  done
  wait $pid 2>/dev/null || true
  ((caught)) && break
done
((caught)) || fail "the run ended before its temporary file could be caught (3 tries)"
[[ $(cat k.nc) == previous ]] || fail "k.nc changed by a killed run"
compgen -G '.k.nc.tmp.*' >/dev/null || fail "expected the killed run's temporary file"
"$tool" -d in -i part.txt -o k.nc -f kf.idx -s ks.idx -c -q
! compgen -G '.k.nc.tmp.*' >/dev/null || fail "the next run left $(ls -A | grep tmp)"
cmp -s <(ncdump file.nc | tail -n +2) <(ncdump k.nc | tail -n +2) || fail "k.nc after the rerun"
echo "generate_streaming: ok"
