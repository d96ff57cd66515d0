#!/usr/bin/env bash
# Groups fuzz findings by cause: replays each saved input through its harness and prints one line
# per input: the sanitizer's verdict, the top stack frame, and the first frame in our sources.
#   tests/fuzz/triage.sh HARNESS_EXE FINDING...
# e.g. tests/fuzz/triage.sh build-fuzz/fuzz/nn-fuzz-netcdf_dataset build-fuzz/fuzz-runs/netcdf_dataset/artifacts/*
set -uo pipefail
exe=$1
shift
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:max_allocation_size_mb=512:symbolize=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for f in "$@"; do
  out=$(NN_FUZZ_TMPDIR=$scratch timeout 60 "$exe" -rss_limit_mb=1024 -timeout=10 "$f" 2>&1)
  verdict=$(grep -m1 -oE 'ERROR: [A-Za-z]+: [A-Za-z-]+[^(]*|runtime error: [^,]*|nn fuzz: [^:]*|libFuzzer: [a-z-]+' <<<"$out")
  top=$(grep -m1 -E '^ +#[0-9]+ .* in [^_]' <<<"$out" | grep -vE '__interceptor|__asan|__sanitizer' |
    sed -E 's/.* in ([^ (]+).*\((.*\/)?([^/ +]+)\+.*/\1 [\3]/; s/.* in ([^ ]+) .*/\1/' | head -1)
  [ -z "$top" ] && top=$(grep -E '^ +#[0-9]+ ' <<<"$out" | grep -vE '__interceptor|__asan|__sanitizer|libclang_rt|memcpy|memset|malloc|calloc' |
    head -1 | sed -E 's/^ +#[0-9]+ 0x[0-9a-f]+ in ([^ ]+).*\(([^)+]*)\+.*/\1 [\2]/; s/^ +#[0-9]+ 0x[0-9a-f]+ in ([^ ]+) .*/\1/; s/^ +#[0-9]+ 0x[0-9a-f]+ +\(([^)+]*)\+.*/? [\1]/')
  ours=$(grep -m1 -oE 'src/engine/[a-z_/]+\.(cpp|h):[0-9]+' <<<"$out")
  printf '%s\t%s\t%s\t%s\n' "$(basename "$f")" "${verdict:-clean}" "${top:-?}" "${ours:--}"
done
