#!/usr/bin/env bash
# Past a file-size limit (ulimit -f) every tool ends as docs/reliability.md says: exit status 1,
# one message naming the file with "File too large", no temporary file, and the previous file
# unchanged. Without the tools ignoring SIGXFSZ the kernel killed them mid-write (status 153),
# leaving .<name>.tmp.<pid>.<n> behind.
# Usage: file_size_limit.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

tiny_ratings
tiny_datasets "$tools"
tiny_config 1000  # a network file of about 150 KB
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n net.nc -e 1 -q
python3 - <<'PY'
def pix(i, x, y, c): return (i * 37 + x * 5 + y * 11 + c * 101 + 3) % 256
img = lambda i: bytes(pix(i, x, y, c) for c in range(3) for y in range(32) for x in range(32))
open("a.bin", "wb").write(b"".join(bytes([k % 10]) + img(k) for k in range(20)))
PY
mkdir out
echo "previous" >out/old.txt

# limited KIB FILE command...: runs the command with files limited to KIB KiB (bash counts
# ulimit -f in 1024-byte blocks) and expects the documented failure for FILE (under out/).
limited() {
  local kib=$1 file=$2 got=0
  shift 2
  for f in out/*; do [[ $f == out/old.txt ]] || rm -f "$f"; done
  cp out/old.txt "out/$file"
  (ulimit -f "$kib" && exec "$@") >stdout.txt 2>err.txt || got=$?
  [[ $got == 1 ]] || fail "$(basename "$1") exited $got under ulimit -f $kib, expected 1: $(cat err.txt)"
  grep -q "error: .*out/$file.*File too large" err.txt ||
    fail "$(basename "$1"): no 'File too large' for out/$file: $(cat err.txt)"
  [[ $(cat "out/$file") == previous ]] || fail "$(basename "$1"): out/$file was replaced"
  if ls -A out | grep -q '\.tmp\.'; then fail "$(basename "$1"): temporary file left: $(ls -A out)"; fi
}

limited 4 gen.nc "$tools/nn-generate" -d input -i ratings.txt -o out/gen.nc -f out/f.idx \
  -s out/s.idx -c
limited 16 net.nc "$tools/nn-train" -c config.json -i input.nc -o output.nc -n out/net.nc -e 1 -q
limited 1 recs.txt "$tools/nn-predict" -n net.nc -r ratings.txt -i features.idx -o features.idx \
  -k 1000 -s out/recs.txt -q
limited 16 dump.nc "$tools/nn-predict" -n net.nc --data input.nc --dump out/dump.nc -q
limited 16 enc.nc "$tools/nn-encode" cifar10 -i a.bin -o out/enc.nc --class-index out/c.idx
# nn-train's TensorBoard file is created whole and then grows by appended records
# (docs/monitoring.md): under 1 KiB its first records and epoch 1's fit, epoch 2's does not, and
# the file is cut back to its last whole record.
(ulimit -f 1 && exec "$tools/nn-train" -c config.json -i input.nc -o output.nc -n tbnet.nc -e 3 -q \
  --tensorboard tb) 2>err.txt && fail "nn-train --tensorboard under ulimit -f 1 exited 0"
grep -q '^nn-train: error: tb/events.out.tfevents.nn-train: write failed: File too large (cut back to its last whole record)$' \
  err.txt || fail "nn-train --tensorboard: $(cat err.txt)"
python3 - tb/events.out.tfevents.nn-train <<'PY' || fail "the TensorBoard file is not whole records"
import struct, sys
data, at, records = open(sys.argv[1], "rb").read(), 0, 0
while at < len(data):
    at += struct.unpack("<Q", data[at:at + 8])[0] + 16
    records += 1
assert at == len(data) and records == 3, (at, len(data), records)  # version, hparams, epoch 1
PY
if ls -A tb | grep -q '\.tmp\.'; then fail "temporary file left in tb: $(ls -A tb)"; fi
echo "file_size_limit: ok"
