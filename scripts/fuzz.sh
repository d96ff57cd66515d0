#!/usr/bin/env bash
# Fuzzes the engine's input parsers with libFuzzer + ASan + UBSan (docs/fuzzing.md).
#   scripts/fuzz.sh [SECONDS] [HARNESS...]
# Builds the harnesses with clang into build-fuzz/ (engine instrumented, no CUDA), then runs each
# harness for SECONDS (default 60), one after another, starting from a copy of its seed corpus
# tests/fuzz/corpus/<harness>/ plus what earlier runs found, and prints per harness: executions,
# findings (crash / leak / timeout / out-of-memory), and coverage (cov = edges, ft = features) at
# the start and at the end. Findings are saved in build-fuzz/fuzz-runs/<harness>/artifacts/;
# once fixed, copy the input to tests/fuzz/regressions/<harness>/ so CTest replays it.
# Environment:
#   NN_FUZZ_BUILD_DIR  build directory (default build-fuzz)
#   NN_FUZZ_JOBS       harnesses run at the same time (default 1)
#   NN_FUZZ_RSS_MB     memory limit per harness process (default 1024; a larger single malloc
#                      than NN_FUZZ_MALLOC_MB, default 512, counts as an out-of-memory finding)
#   NN_FUZZ_STOP=1     stop a harness at its first finding (default: record it and go on)
#   NN_FUZZ_NO_BUILD=1 use the harnesses already built
#   NN_SKIP_APT=1      do not install clang, libclang-rt-dev, libomp-dev when missing
#   NN_FUZZ_BIN_DIR    where the harness executables are (default <build>/fuzz); NN_FUZZ_RUNS_DIR
#                      where corpora, logs and findings go (default <build>/fuzz-runs)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

all=(network_json cdl netcdf_dataset network_file text_examples image_corpus)
seconds=${1:-60}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=("${all[@]}")
build=${NN_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${NN_FUZZ_JOBS:-1}
rss_mb=${NN_FUZZ_RSS_MB:-1024}
malloc_mb=${NN_FUZZ_MALLOC_MB:-512}

# Largest input per harness: network files and datasets are binary NetCDF/HDF5 (seeds up to
# ~9 KB); the text formats stay small so that mutations stay meaningful.
max_len() {
  case $1 in
    netcdf_dataset) echo 12000 ;;
    network_file) echo 20000 ;;
    image_corpus) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

if [ "${NN_FUZZ_NO_BUILD:-0}" != 1 ]; then
  # clang with libFuzzer and the sanitizer runtimes, and clang's OpenMP (Debian packages; only
  # fuzzing needs them, so scripts/setup.sh does not install them).
  fuzz_packages=(clang libclang-rt-dev libomp-dev)
  if [ "${NN_SKIP_APT:-0}" != 1 ]; then
    missing=()
    for p in "${fuzz_packages[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
      sudo=""
      [ "$(id -u)" -ne 0 ] && sudo="sudo"
      $sudo apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
  fi
  command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang++ (apt-get install ${fuzz_packages[*]})" >&2; exit 2; }
  launcher=()
  command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNN_BUILD_FUZZERS=ON -DNN_BUILD_TESTS=OFF -DNN_BUILD_BENCHMARKS=OFF -DNN_ENABLE_CUDA=OFF \
    -DNN_ENABLE_MPI=OFF -DNN_ENABLE_DNNL=OFF "${launcher[@]}" >/dev/null
  cmake --build "$build" -j"$(nproc)" --target nn-fuzzers >/dev/null
fi

# Sanitizer findings are fatal; leaks are checked after every input. A C allocation (malloc) larger
# than NN_FUZZ_MALLOC_MB fails with NULL, as it would on a machine without that memory: the netCDF
# library allocates what a header claims and reports NC_ENOMEM, which the engine must turn into
# a clean error. A C++ `new` that large still aborts with a report naming the caller: code of ours
# that trusts a claimed size.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1:allocator_may_return_null=1:max_allocation_size_mb=$malloc_mb}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
runs=${NN_FUZZ_RUNS_DIR:-$build/fuzz-runs}
bin=${NN_FUZZ_BIN_DIR:-$build/fuzz}
fork=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
[ "${NN_FUZZ_STOP:-0}" = 1 ] && fork=()

run_one() {
  local h=$1 dir=$runs/$1
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp -n "$root/tests/fuzz/corpus/$h/"* "$dir/corpus/" 2>/dev/null || true
  ls "$dir/artifacts" >"$dir/artifacts-before.txt"
  # Scratch files of the harness go to a private directory (removed afterwards).
  local scratch
  scratch=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
  NN_FUZZ_TMPDIR=$scratch "$bin/nn-fuzz-$h" "$dir/corpus" "${fork[@]}" \
    -max_total_time="$seconds" -max_len="$(max_len "$h")" -timeout=10 \
    -rss_limit_mb="$rss_mb" -malloc_limit_mb="$malloc_mb" -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" >"$dir/log.txt" 2>&1 || true
  rm -rf "$scratch"
}

# Summary of one harness's log: executions, findings, coverage at start and end.
summarise() {
  local h=$1 dir=$runs/$1
  local first last execs new_findings
  first=$(grep -m1 -oE 'cov: [0-9]+ ft: [0-9]+' "$dir/log.txt" || echo "cov: ? ft: ?")
  last=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$dir/log.txt" | tail -1 || true)
  execs=$(grep -oE '^(stat::number_of_executed_units: |#)[0-9]+' "$dir/log.txt" |
    grep -oE '[0-9]+' | sort -n | tail -1 || true)
  new_findings=$(comm -13 "$dir/artifacts-before.txt" <(ls "$dir/artifacts") | tr '\n' ' ')
  local crash leak timeout oom
  count() { tr ' ' '\n' <<<"$new_findings" | awk -v p="^$1-" '$0 ~ p { n++ } END { print n + 0 }'; }
  crash=$(count crash)
  leak=$(count leak)
  timeout=$(count timeout)
  oom=$(count oom)
  printf '%-15s %12s %6s %5s %7s %4s   %-22s %-22s\n' "$h" "${execs:-?}" "$crash" "$leak" \
    "$timeout" "$oom" "${first}" "${last:-?}"
  if [ -n "$new_findings" ]; then
    local n
    n=$(wc -w <<<"$new_findings")
    echo "    $n new in $dir/artifacts/ (tests/fuzz/triage.sh groups them): $(cut -d' ' -f1-3 <<<"$new_findings")$([ "$n" -gt 3 ] && echo ...)"
  fi
  return 0
}

pids=()
for h in "${harnesses[@]}"; do
  [ -x "$bin/nn-fuzz-$h" ] || { echo "fuzz.sh: no harness $h (have: ${all[*]})" >&2; exit 2; }
  echo "fuzz.sh: $h for ${seconds}s (log: $runs/$h/log.txt)"
  run_one "$h" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}"
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p"; done

echo
printf '%-15s %12s %6s %5s %7s %4s   %-22s %-22s\n' harness executions crash leak timeout oom \
  "start" "end"
status=0
for h in "${harnesses[@]}"; do
  summarise "$h"
  if comm -13 "$runs/$h/artifacts-before.txt" <(ls "$runs/$h/artifacts") | grep -q .; then
    status=1
  fi
done
exit $status
