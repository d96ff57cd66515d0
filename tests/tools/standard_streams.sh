#!/usr/bin/env bash
# "-" means standard input/output wherever a file name is taken, and every tool keeps standard
# output for results: nn-generate and nn-encode write datasets to a pipe, nn-train writes its log
# to stderr and (with -n -) the network to stdout, nn-predict reads that network from stdin.
# Usage: standard_streams.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir
# A private temporary directory, so the check that no spool file is left behind is exact.
export TMPDIR=$work/tmp
mkdir "$TMPDIR"
no_spool_left() { [[ -z $(ls -A "$TMPDIR") ]] || fail "$1: left in TMPDIR: $(ls -A "$TMPDIR")"; }

python3 - <<'PY'
import random
random.seed(11)
with open("ratings.txt", "w") as f:
    for u in range(30):
        t = u % 3
        items = [f"m{t*6+j}" for j in range(6) if random.random() < 0.7] or [f"m{t*6}"]
        f.write(f"u{u}\t" + ":".join(items) + "\n")
PY

# nn-generate -o -: the dataset on stdout equals the one written to a file; the summary is on
# stderr and names standard output.
"$tools/nn-generate" -d input -i ratings.txt -o input.nc -f features.idx -s samples.idx -c 2>/dev/null
"$tools/nn-generate" -d input -i ratings.txt -o - -f features.idx -s samples.idx \
  >piped.nc 2>gen.log || fail "nn-generate -o -: $(cat gen.log)"
cmp -s <(ncdump input.nc | sed 1d) <(ncdump piped.nc | sed 1d) ||
  fail "nn-generate -o - differs from the file output"
grep -q '^nn-generate: wrote standard output: dataset "input"' gen.log || fail "summary: $(cat gen.log)"
no_spool_left "nn-generate -o -"
# Two outputs cannot both be standard output.
set +e
"$tools/nn-generate" -d input -i ratings.txt -o - -f - -s samples.idx -c >/dev/null 2>err.txt
rc=$?
set -e
[[ $rc != 0 ]] && grep -q "only one can go there" err.txt || fail "-o - -f -: rc=$rc $(cat err.txt)"

"$tools/nn-generate" -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx 2>/dev/null

cat > config.json <<'JSON'
{ "Name": "tiny", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 6, "Activation": "Sigmoid" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid" } ] }
JSON

# nn-train: logs on stderr, nothing on stdout; with -n - the network is stdout's only content.
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n file.nc -e 2 -b 8 --seed 3 \
  --checkpoint-interval 0 >train.out 2>train.log || fail "nn-train: $(cat train.log)"
[[ ! -s train.out ]] || fail "nn-train wrote to standard output: $(head -3 train.out)"
grep -q '^epoch 2/2:' train.log || fail "no epoch line on stderr: $(cat train.log)"
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n - -e 2 -b 8 --seed 3 \
  --checkpoint-interval 1 \
  >piped_net.nc 2>pipe.log || fail "nn-train -n -: $(cat pipe.log)"
grep -q '^wrote the network to standard output' pipe.log || fail "final line: $(tail -2 pipe.log)"
[[ -s network.epochs.jsonl ]] || fail "-n -: per-epoch log should be network.epochs.jsonl"
compgen -G 'checkpoint*.nc' >/dev/null || fail "-n -: checkpoints should be checkpoint<epoch>.nc"
cmp -s <(ncdump file.nc | sed 1d | grep -v checkpoint_) <(ncdump piped_net.nc | sed 1d | grep -v checkpoint_) ||
  fail "the network on stdout differs from the same run written to a file"

# nn-predict -n -: the network read from a pipe gives the same recommendations as from the file.
"$tools/nn-predict" -n file.nc -r ratings.txt -i features.idx -o features.idx -k 3 \
  >recs_file.txt 2>/dev/null
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n - -e 2 -b 8 --seed 3 |
  "$tools/nn-predict" -n - -r ratings.txt -i features.idx -o features.idx -k 3 \
    >recs_pipe.txt 2>predict.log || fail "nn-train | nn-predict -n -: $(cat predict.log)"
[[ $(wc -l <recs_pipe.txt) == 30 ]] || fail "30 users expected: $(wc -l <recs_pipe.txt)"
cmp -s recs_file.txt recs_pipe.txt || fail "recommendations differ through the pipe"
no_spool_left "nn-train -n - | nn-predict -n -"
set +e
"$tools/nn-predict" -n - -r - -k 3 </dev/null >/dev/null 2>err.txt
rc=$?
"$tools/nn-predict" -n - -r ratings.txt -i features.idx -o features.idx -k 3 </dev/null \
  >/dev/null 2>err2.txt
rc2=$?
set -e
[[ $rc == 2 ]] && grep -q 'both read standard input' err.txt || fail "-n - -r -: rc=$rc $(cat err.txt)"
[[ $rc2 != 0 ]] && grep -q 'standard input (network): empty; expected a NetCDF file' err2.txt ||
  fail "empty stdin: rc=$rc2 $(cat err2.txt)"
# A damaged network on stdin: the checksum error names standard input, not the spool's path.
python3 -c "import sys; b = bytearray(open('file.nc', 'rb').read()); b[len(b) // 2] ^= 0x5a; sys.stdout.buffer.write(b)" >damaged.nc
set +e
"$tools/nn-predict" -n - -r ratings.txt -i features.idx -o features.idx -k 3 <damaged.nc \
  >recs_damaged.txt 2>err3.txt
rc3=$?
set -e
[[ $rc3 == 1 && ! -s recs_damaged.txt ]] &&
  grep -q '^nn-predict: error: standard input (network): .*the file is damaged' err3.txt &&
  ! grep -q 'from-stdin' err3.txt || fail "damaged network on stdin: rc=$rc3 $(cat err3.txt)"
no_spool_left "failed runs"
# nn-encode -o -: the same bytes as the file output (an IDX pair generated here).
python3 - <<'PY'
import struct
n, rows, cols = 5, 3, 4
img = struct.pack(">IIII", 0x803, n, rows, cols) + bytes((i * 7 + p) % 256 for i in range(n) for p in range(rows * cols))
open("img", "wb").write(img)
open("lab", "wb").write(struct.pack(">II", 0x801, n) + bytes([1, 0, 2, 1, 0]))
PY
"$tools/nn-encode" idx -i img -l lab -o enc.nc --classes 3 2>/dev/null
"$tools/nn-encode" idx -i img -l lab -o - --classes 3 --class-index classes2.idx >enc_piped.nc \
  2>enc.log || fail "nn-encode -o -: $(cat enc.log)"
cmp -s <(ncdump enc.nc | sed 1d) <(ncdump enc_piped.nc | sed 1d) || fail "nn-encode -o - differs"
no_spool_left "nn-encode -o -"
echo "standard streams OK"
