#!/usr/bin/env bash
# nn-encode end to end on CIFAR-10/100 and IDX files generated here (byte by byte, so the
# expected pixels and labels are known): file layout via ncdump, class index files, --split,
# --limit, gzip input, and the exit status and message of every kind of bad input.
# Usage: bash encode_basic.sh <tool-dir> <source-dir>
set -euo pipefail

tool="$(realpath "$1")/nn-encode"
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

# Pixel (image i, x, y, channel c) = (i*37 + x*5 + y*11 + c*101 + 3) mod 256 in every file.
python3 - <<'PY'
import gzip, struct
def pix(i, x, y, c): return (i * 37 + x * 5 + y * 11 + c * 101 + 3) % 256
def image(i, w, h, ch): return bytes(pix(i, x, y, c) for c in range(ch) for y in range(h) for x in range(w))
def cifar(first, labels):  # labels: list of byte tuples
    return b"".join(bytes(l) + image(first + k, 32, 32, 3) for k, l in enumerate(labels))
open("a.bin", "wb").write(cifar(0, [(3,), (9,), (0,), (1,), (2,), (3,)]))
open("b.bin", "wb").write(cifar(6, [(4,), (5,), (6,), (7,)]))
open("c100.bin", "wb").write(cifar(0, [(19, 99), (4, 30), (0, 0)]))
open("fine.txt", "w").write("".join(f"fine_{k}\n" for k in range(100)))
n, rows, cols = 7, 4, 6
imgs = struct.pack(">IIII", 0x803, n, rows, cols) + b"".join(image(i, cols, rows, 1) for i in range(n))
labs = struct.pack(">II", 0x801, n) + bytes([2, 7, 1, 9, 0, 5, 5])
open("img", "wb").write(imgs)
gzip.open("img.gz", "wb").write(imgs)
gzip.open("lab.gz", "wb").write(labs)
open("lab", "wb").write(labs)
open("img_cut", "wb").write(imgs[:-1])
open("lab_as_img", "wb").write(labs)
PY

# ---- CIFAR-10: two batch files -> one file with both datasets, CIFAR-10 class names ----
expect_status 0 cifar10 -i a.bin b.bin -o all.nc
grep -q 'wrote all.nc: 10 images 32x32x3, 10 classes' err.txt || fail "summary: $(cat err.txt)"
dump=$(ncdump -h all.nc)
for want in 'datasets = 2U' 'name0 = "input"' 'dataType0 = 8U' 'attributes0 = 0U' 'kind0 = 1U' \
  'dimensions0 = 3U' 'width0 = 32U' 'height0 = 32U' 'length0 = 3U' 'examplesDim0 = 10' \
  'ubyte data0' 'name1 = "output"' 'attributes1 = 3U' 'width1 = 10U' 'dimensions1 = 1U'; do
  grep -q "$want" <<<"$dump" || fail "all.nc header lacks '$want'"
done
grep -q 'sparseIndex1 = 3, 9, 0, 1, 2, 3, 4, 5, 6, 7 ;' <(ncdump -v sparseIndex1 all.nc) ||
  fail "labels: $(ncdump -v sparseIndex1 all.nc | tail -3)"
# Pixels in DSSTNE order: example 7 (from b.bin), x=2, y=1, channel 2 (blue).
python3 - <<'PY' || fail "pixel placement"
import subprocess, re
text = subprocess.run(["ncdump", "-v", "data0", "all.nc"], capture_output=True, text=True).stdout
vals = [int(v) for v in re.findall(r"\d+", text.split("data0 =")[-1])]
i, x, y, c = 7, 2, 1, 2
got = vals[i * 3072 + x + 32 * (y + 32 * c)]
assert got == (i * 37 + x * 5 + y * 11 + c * 101 + 3) % 256, got
assert len(vals) == 10 * 3072, len(vals)
PY
[[ $(head -1 classes.idx) == $'airplane\t0' && $(tail -1 classes.idx) == $'truck\t9' ]] ||
  fail "classes.idx: $(cat classes.idx)"

# ---- --split, --shuffle-seed, custom names, --class-index ----
mkdir -p sub
expect_status 0 cifar10 -i a.bin b.bin -o sub/train.nc --split 0.7 --output2 sub/valid.nc \
  --input-name pixels --output-name label
grep -q 'examplesDim0 = 7' <(ncdump -h sub/train.nc) || fail "train part should hold 7"
grep -q 'sparseIndex1 = 5, 6, 7 ;' <(ncdump -v sparseIndex1 sub/valid.nc) || fail "valid part labels"
grep -q 'name0 = "pixels"' <(ncdump -h sub/valid.nc) || fail "--input-name"
grep -q 'name1 = "label"' <(ncdump -h sub/valid.nc) || fail "--output-name"
[[ -s sub/classes.idx ]] || fail "class index should default to the output's directory"
expect_status 0 cifar10 -i a.bin b.bin -o s1.nc --split 0.5 --output2 s2.nc --shuffle-seed 9
a=$(ncdump -v sparseIndex1 s1.nc | grep 'sparseIndex1 =')
b=$(ncdump -v sparseIndex1 s2.nc | grep 'sparseIndex1 =')
[[ "$a" != *'3, 9, 0, 1, 2 ;'* ]] || fail "--shuffle-seed should change the order: $a"
python3 - "$a" "$b" <<'PY' || fail "shuffled split should keep every image once: $a / $b"
import re, sys
got = sorted(int(v) for s in sys.argv[1:] for v in re.findall(r"\d+", s.split("=")[1]))
assert got == sorted([3, 9, 0, 1, 2, 3, 4, 5, 6, 7]), got
PY

# ---- CIFAR-100: fine (default) and coarse labels, names from a meta file ----
expect_status 0 cifar100 -i c100.bin -o fine.nc --class-names fine.txt --class-index fine.idx
grep -q 'width1 = 100U' <(ncdump -h fine.nc) || fail "fine labels: 100 classes"
grep -q 'sparseIndex1 = 99, 30, 0 ;' <(ncdump -v sparseIndex1 fine.nc) || fail "fine labels"
grep -qx $'fine_99\t99' fine.idx || fail "fine.idx"
expect_status 0 cifar100 -i c100.bin -o coarse.nc --coarse --class-index coarse.idx
grep -q 'width1 = 20U' <(ncdump -h coarse.nc) || fail "coarse labels: 20 classes"
grep -q 'sparseIndex1 = 19, 4, 0 ;' <(ncdump -v sparseIndex1 coarse.nc) || fail "coarse labels"
grep -qx $'19\t19' coarse.idx || fail "coarse.idx should hold numeric names"

# ---- IDX: gzip or plain (detected from content), --limit, Fashion-MNIST names ----
expect_status 0 idx -i img.gz -l lab -o idx.nc --limit 5 --class-names fashion-mnist
dump=$(ncdump idx.nc)
for want in 'dimensions0 = 2U' 'width0 = 6U' 'height0 = 4U' 'examplesDim0 = 5' \
  'sparseIndex1 = 2, 7, 1, 9, 0 ;'; do
  grep -q "$want" <<<"$dump" || fail "idx.nc lacks '$want'"
done
grep -q 'length0' <<<"$dump" && fail "a 2-D dataset should not carry length0"
grep -qx $'Ankle boot\t9' classes.idx || fail "fashion-mnist names: $(cat classes.idx)"
ncdump -v data0 idx.nc | grep 'data0 = 3, 8, 13, 18, 23, 28, 14,' >/dev/null || fail "idx pixels"

# ---- errors: runtime problems exit 1 and name the file; usage problems exit 2 ----
head -c 5000 a.bin >cut.bin
expect_status 1 cifar10 -i a.bin cut.bin -o bad.nc
grep -q '^nn-encode: error: .*cut.bin: size 5000 bytes is not a whole number of 3073-byte' err.txt ||
  fail "truncated CIFAR: $(cat err.txt)"
expect_status 1 cifar10 -i c100.bin -o bad.nc
grep -q 'CIFAR-100 file?' err.txt || fail "CIFAR-100 as CIFAR-10: $(cat err.txt)"
expect_status 1 cifar10 -i img -o bad.nc
grep -q 'img: size' err.txt || fail "IDX as CIFAR: $(cat err.txt)"
expect_status 1 idx -i img_cut -l lab -o bad.nc
grep -q 'img_cut: truncated: 7 images of 4x6 need 168 bytes' err.txt || fail "cut IDX: $(cat err.txt)"
expect_status 1 idx -i lab_as_img -l lab -o bad.nc
grep -q 'an IDX label file; expected 0x00000803' err.txt || fail "labels as images: $(cat err.txt)"
expect_status 1 idx -i img -l lab -o bad.nc --classes 8
grep -q 'lab: label 3 (byte offset 11) is 9; expected 0..7' err.txt || fail "--classes: $(cat err.txt)"
expect_status 1 cifar10 -i a.bin -o bad.nc --class-names fine.txt
grep -q 'fine.txt: 100 class names; expected 10' err.txt || fail "names count: $(cat err.txt)"
[[ ! -e bad.nc ]] || fail "no output may be left after a failure"
expect_status 2 idx -i img -o bad.nc
grep -q 'needs the label file' err.txt || fail "idx without labels: $(cat err.txt)"
expect_status 2 cifar10 -i a.bin -o bad.nc --coarse
expect_status 2 cifar10 -i a.bin -o bad.nc --split 0.5
expect_status 2 cifar10 -i a.bin -o bad.nc --output2 other.nc
expect_status 2 cifar10 -i a.bin -o bad.nc --split 1 --output2 other.nc
grep -q 'leaves no images for other.nc' err.txt || fail "empty split: $(cat err.txt)"
expect_status 2 cifar10 -i a.bin -l lab -o bad.nc
expect_status 2 jpeg -i a.bin -o bad.nc
expect_status 2 cifar10 -i missing.bin -o bad.nc
[[ ! -e bad.nc && ! -e other.nc ]] || fail "no output may be left after a usage error"
"$tool" --help >help.txt || fail "--help should exit 0"
grep -q -- '--class-names' help.txt || fail "--help should list the options"
echo "encode_basic: all checks passed"
