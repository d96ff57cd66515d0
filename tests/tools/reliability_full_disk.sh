#!/usr/bin/env bash
# Every tool's outputs written to a full file system (a small tmpfs; needs root, else skipped
# with a message): each run ends with one message naming the file and the OS reason ("No space
# left on device"), exit status 1 (never a crash by signal), no temporary or partial file, and
# existing outputs untouched (nn-generate's .nc and index files replaced together or not at all).
# Usage: reliability_full_disk.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$1
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir
if [[ $(id -u) != 0 ]]; then
  echo "reliability_full_disk: SKIPPED (needs root to mount a tmpfs)"
  exit 77  # CTest: Skipped (SKIP_RETURN_CODE)
fi
mkdir disk
if ! mount -t tmpfs -o size=256k tmpfs disk 2>mount.err; then
  echo "reliability_full_disk: SKIPPED (mount -t tmpfs refused: $(cat mount.err))"
  exit 77
fi
trap 'umount "$work/disk" 2>/dev/null || true; rm -rf "$work"' EXIT
tiny_ratings
tiny_datasets "$tools"
tiny_config 1000
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n net.nc -e 1 -q
python3 - <<'PY'
def pix(i, x, y, c): return (i * 37 + x * 5 + y * 11 + c * 101 + 3) % 256
img = lambda i: bytes(pix(i, x, y, c) for c in range(3) for y in range(32) for x in range(32))
open("a.bin", "wb").write(b"".join(bytes([k % 10]) + img(k) for k in range(40)))
PY

# Leaves `free` KiB on the tmpfs (0: completely full).
fill_to() {
  rm -f disk/filler
  local avail=$(($(stat -f -c '%a*%S' disk) / 1024))
  dd if=/dev/zero of=disk/filler bs=1k count=$((avail - $1)) status=none 2>/dev/null || true
}

# expect_full OUTPUTS -- command...: exit 1 with "No space left on device" naming one of the
# OUTPUTS, and the disk holds exactly what it held before (same files, same contents). The one
# exceptions are nn-train's per-epoch log (*.epochs.jsonl) and TensorBoard file (events.out.*):
# they record epochs that completed before the failure, like the checkpoints a failed run keeps;
# the log is written atomically and the TensorBoard file cut back to its last whole record (when
# they are there they are complete; the 0 KiB case checks they cannot appear half-written).
expect_full() {
  local outputs=() got=0
  while [[ $1 != -- ]]; do outputs+=("$1"); shift; done
  shift
  (cd disk && ls -A | sort | xargs -r md5sum) >before.txt
  "$@" >out.txt 2>err.txt || got=$?
  ((got < 128)) || fail "$1 crashed (exit $got): $(cat err.txt)"
  [[ $got == 1 ]] || fail "$* exited $got, expected 1: $(cat err.txt)"
  grep -q "No space left on device" err.txt || fail "$*: no OS reason: $(cat err.txt)"
  local named=0 o
  for o in "${outputs[@]}"; do grep -qF "disk/$o" err.txt && named=1; done
  ((named)) || fail "$*: message names none of ${outputs[*]}: $(cat err.txt)"
  (cd disk && ls -A | grep -v '\.epochs\.jsonl$' | grep -v '^events\.out\.tfevents\.' | sort |
    xargs -r md5sum) >after.txt
  for o in disk/*.epochs.jsonl; do
    [[ -e $o ]] || continue
    python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$o" ||
      fail "$*: $o is not complete JSON lines"
    rm -f "$o"
  done
  for o in disk/events.out.tfevents.*; do
    [[ -e $o ]] || continue
    python3 -c 'import struct, sys
data, at = open(sys.argv[1], "rb").read(), 0
while at + 8 <= len(data): at += struct.unpack("<Q", data[at:at + 8])[0] + 16
assert at == len(data)' "$o" || fail "$*: $o ends in a partial record"
    rm -f "$o"
  done
  cmp -s before.txt after.txt || fail "$*: files on the full disk changed: $(diff before.txt after.txt)"
}

for free in 0 4; do
  # nn-generate: an existing dataset + index set stays as it was (one unit).
  rm -f disk/filler
  "$tools/nn-generate" -d input -i ratings.txt -o disk/gen.nc -f disk/f.idx -s disk/s.idx -c 2>/dev/null
  sed 's/^u/v/' ratings.txt >more.txt  # new samples: the sample index must change too
  fill_to $free
  expect_full gen.nc f.idx s.idx -- "$tools/nn-generate" -d input -i more.txt -o disk/gen.nc \
    -f disk/f.idx -s disk/s.idx -m
  rm -f disk/gen.nc disk/f.idx disk/s.idx

  fill_to $free
  expect_full net.nc ck1.nc net.epochs.jsonl -- "$tools/nn-train" -c config.json -i input.nc -o output.nc \
    -n disk/net.nc -e 1 --checkpoint-name disk/ck --checkpoint-interval 1 -q
  # The TensorBoard file: its creation fails (0 KiB), or an append does (4 KiB: 40 epochs with a
  # record per minibatch).
  expect_full events.out.tfevents.nn-train -- "$tools/nn-train" -c config.json -i input.nc \
    -o output.nc -n tb.nc -e 40 --tensorboard disk --tensorboard-interval 1 -q
  expect_full recs.txt -- "$tools/nn-predict" -n net.nc -r ratings.txt -i features.idx \
    -o features.idx -k 100 -s disk/recs.txt -q
  expect_full dump.nc -- "$tools/nn-predict" -n net.nc --data input.nc --dump disk/dump.nc -q
  expect_full enc.nc classes.idx -- "$tools/nn-encode" cifar10 -i a.bin -o disk/enc.nc \
    --class-index disk/classes.idx
done
echo "reliability_full_disk: ok"
