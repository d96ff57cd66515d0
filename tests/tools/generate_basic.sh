# nn-generate end to end: converts the user-guide examples (tests/data/generate), checks the file
# with ncdump, index-file handling, and exit codes (0 ok, 1 runtime error, 2 usage error).
# Usage: bash generate_basic.sh <tool-dir> <source-dir>
set -euo pipefail

tool="$(realpath "$1")/nn-generate"
data="$(realpath "$2")/tests/data/generate"
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

# ---- indicator example: new feature index ----
expect_status 0 -d input -i "$data/indicator.txt" -o ind.nc -f features.idx -s samples.idx -c
grep -q '3 samples, 8 features (8 new), 9 non-zeros, width 128' err.txt || fail "summary: $(cat err.txt)"
dump=$(ncdump ind.nc)
grep -q 'name0 = "input"' <<<"$dump" || fail "name0 missing"
grep -q 'attributes0 = 3U' <<<"$dump" || fail "attributes0 should be 3U"
grep -q 'dataType0 = 0U' <<<"$dump" || fail "dataType0 should be 0U"
grep -q 'width0 = 128U' <<<"$dump" || fail "width0 should be 128U"
grep -q 'sparseStart0 = 0, 3, 6 ;' <<<"$dump" || fail "sparseStart0"
grep -q 'sparseEnd0 = 3, 6, 9 ;' <<<"$dump" || fail "sparseEnd0"
grep -q 'sparseIndex0 = 0, 1, 2, 3, 1, 4, 5, 6, 7 ;' <<<"$dump" || fail "sparseIndex0"
if grep -q 'sparseData0' <<<"$dump"; then fail "indicator file must not hold sparseData0"; fi
[[ $(wc -l <features.idx) == 8 ]] || fail "features.idx should have 8 lines"
grep -qx $'Feature5\t3' features.idx || fail "Feature5 should have index 3"
grep -qx $'Example2\t1' samples.idx || fail "Example2 should have index 1"

# ---- analog example with the existing (read-only) feature index ----
before=$(stat -c '%i %y' features.idx)  # a rewrite renames a new file: new inode
expect_status 0 --dataset ratings --input "$data/analog.txt" --output ana.nc \
  --features features.idx --samples samples.idx --type analog
[[ $(stat -c '%i %y' features.idx) == "$before" ]] || fail "unchanged feature index was rewritten"
dump=$(ncdump ana.nc)
grep -q 'attributes0 = 1U' <<<"$dump" || fail "analog attributes0 should be 1U"
grep -q 'dataType0 = 4U' <<<"$dump" || fail "analog dataType0 should be 4U"
grep -q 'sparseEnd0 = 1, 2, 4 ;' <<<"$dump" || fail "analog sparseEnd0"
grep -q 'sparseIndex0 = 0, 1, 2, 4 ;' <<<"$dump" || fail "analog sparseIndex0 (Feature4 is 4)"
grep -q 'sparseData0 = 123, 234, 345, 456 ;' <<<"$dump" || fail "analog sparseData0"

# ---- unknown features are dropped without -m, added with -m ----
printf 'Example1\tFeature1:NewFeature\n' >new.txt
expect_status 0 -d x -i new.txt -o new.nc -f features.idx -s samples.idx
grep -q '1 unknown features dropped' err.txt || fail "dropped count: $(cat err.txt)"
expect_status 0 -d x -i new.txt -o new.nc -f features.idx -s samples.idx -m --align 1
grep -qx $'NewFeature\t8' features.idx || fail "-m should append NewFeature as 8"
grep -q 'width0 = 9U' <(ncdump -h new.nc) || fail "--align 1 should give width 9"

# ---- errors ----
expect_status 2 -i "$data/indicator.txt" -o x.nc -f f.idx -s s.idx -c
grep -q '^nn-generate: error:' err.txt || fail "missing -d: $(cat err.txt)"
expect_status 2 -d x -i "$data/indicator.txt" -o x.nc -f f.idx -s s.idx -c -m
expect_status 2 -d x -i "$data/indicator.txt" -o x.nc -f f.idx -s s.idx -t binary
expect_status 1 -d x -i missing.txt -o x.nc -f f.idx -s s.idx -c
grep -q '^nn-generate: error: missing.txt' err.txt || fail "missing input: $(cat err.txt)"
[[ ! -e x.nc ]] || fail "no output may be left after a failure"
expect_status 1 -d x -i "$data/indicator.txt" -o x.nc -f absent.idx -s s.idx
grep -q 'absent.idx' err.txt || fail "missing feature index: $(cat err.txt)"
printf 'u\tFeature1,abc\n' >bad.txt
expect_status 1 -d x -i bad.txt -o x.nc -f features.idx -s s.idx -t analog
grep -q 'bad.txt:1:' err.txt || fail "bad value should name file:line: $(cat err.txt)"
"$tool" --help >help.txt || fail "--help should exit 0"
grep -q -- '--create-features' help.txt || fail "--help should list the options"
echo "generate_basic: all checks passed"
