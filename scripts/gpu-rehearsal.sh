#!/usr/bin/env bash
# Rehearses the GPU check here, without a GPU, before device time is spent on it: unpacks the
# archive of scripts/gpu-bundle.sh in a minimal Debian root that has none of this project's
# packages (debootstrap minbase, plus python3 and xz as the GPU machine's image has them), with the
# CUDA libraries taken from NVIDIA's Python wheels (installed into the root's site-packages, as on
# the GPU machine) rather than from this machine's toolkit, and runs
#   scripts/gpu-check.sh --bundle ARCHIVE
# there. It passes when every binary loads (the check's "libraries" step passes), every test binary
# starts and reports that it found no CUDA device (NO-DEVICE, not FAIL), the host-only tests pass,
# and the check reaches its end and writes its report, results and logs.
#
# Usage (as root): scripts/gpu-rehearsal.sh [ARCHIVE]   (default out/gpu-bundle/nn-gpu-bundle.tar.xz)
#   NN_FRESH_CACHE   cached root tarball folder, shared with scripts/fresh-machine-check.sh
#                    (default /var/cache/nn-fresh-root)
#   NN_WHEEL_CACHE   downloaded wheels (default /var/cache/nn-gpu-wheels)
#   NN_REHEARSAL_OUT where the check's report, results and logs are copied (default
#                    out/gpu-rehearsal)
# Same safety rules as fresh-machine-check.sh: mounts in a private namespace, host trees read-only,
# everything unmounted before the root is removed.
set -euo pipefail
script=$(readlink -f "$0")
repo=$(cd "$(dirname "$script")/.." && pwd)
suite=bookworm
die() { echo "gpu-rehearsal: error: $*" >&2; exit 1; }
note() { echo "gpu-rehearsal: $*"; }

# The CUDA 13 libraries the bundle leaves to the GPU machine, as the wheels its image holds.
wheels=(nvidia-cublas nvidia-curand nvidia-nccl-cu13 nvidia-cudnn-cu13)

inner() {
  local root=$1 archive=$2 out=$3
  local cache=${NN_FRESH_CACHE:-/var/cache/nn-fresh-root}
  local tarball=$cache/$suite-minbase.tar.gz
  inner_root=$root
  trap 'for m in $(awk -v d="$inner_root" "index(\$2, d \"/\") == 1 { print \$2 }" /proc/self/mounts | sort -r); do umount -l "$m" || true; done' EXIT
  mount --make-rprivate /
  if [ ! -f "$tarball" ]; then
    note "debootstrap --variant=minbase $suite (cached as $tarball)"
    debootstrap --variant=minbase "$suite" "$root" http://deb.debian.org/debian > "$out/debootstrap.log" 2>&1 ||
      die "debootstrap failed ($out/debootstrap.log)"
    for m in $(awk -v d="$root" 'index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r); do umount -l "$m"; done
    mkdir -p "$cache"
    tar -cpzf "$tarball.tmp.$$" --numeric-owner -C "$root" . && mv "$tarball.tmp.$$" "$tarball"
  else
    tar -xpzf "$tarball" --numeric-owner -C "$root"
  fi
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  echo 'APT::Sandbox::User "root";' > "$root/etc/apt/apt.conf.d/99sandbox-root"
  apt-config dump 2> /dev/null | grep -E '^Acquire::Check-(Valid-Until|Date) ' \
    > "$root/etc/apt/apt.conf.d/99host-validity" || true
  [ -f /etc/apt/sources.list.d/debian.sources ] &&
    cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/" && : > "$root/etc/apt/sources.list"
  mount -t proc proc "$root/proc"
  mount -t sysfs -o ro sysfs "$root/sys"  # hwloc (Open MPI's launcher) reads the CPU topology
  mkdir -p "$root/dev/shm" && mount -t tmpfs tmpfs "$root/dev/shm"
  # What the GPU machine's image has and a minbase root lacks: python3 and xz (for tar -J).
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin bash -c \
    'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 xz-utils' \
    > "$out/apt.log" 2>&1 || die "apt-get in the root failed ($out/apt.log)"
  # The wheels' nvidia/<name>/lib folders land in the root's site-packages, as pip puts them.
  local site
  site=$(chroot "$root" python3 -c 'import site; print(site.getsitepackages()[0])')
  mkdir -p "$root$site"
  for w in "${NN_WHEEL_CACHE:-/var/cache/nn-gpu-wheels}"/*.whl; do
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$w" "$root$site"
  done
  note "CUDA libraries from wheels in $site: $(cd "$root$site" && ls -d nvidia/*/lib | tr '\n' ' ')"
  # Nothing of this project's packages, and no CUDA toolkit, may be visible in the root.
  for p in libnetcdf19 libopenmpi3 libdnnl2 libopenblas0 libhdf5-103-1; do
    chroot "$root" dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok" &&
      die "the root has $p installed: not a fresh GPU machine"
  done
  [ ! -e "$root/usr/local/cuda" ] || die "the root has /usr/local/cuda"
  mkdir -p "$root/rehearsal/out"
  cp "$archive" "$repo/scripts/gpu-check.sh" "$root/rehearsal/"
  local rc=0
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    NN_CHECK_OUT=/rehearsal/out bash /rehearsal/gpu-check.sh --bundle "/rehearsal/$(basename "$archive")" \
    > "$out/check.log" 2>&1 || rc=$?
  cp -r "$root/rehearsal/out/." "$out/"
  note "gpu-check.sh exited with $rc (1 expected: no step can pass without a GPU)"
}

case "${1:-}" in
  --inner) shift; inner "$@"; exit $? ;;
  -h | --help) sed -n '2,20p' "$script" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, mounts, chroot)"
archive=$(realpath -m "${1:-$repo/out/gpu-bundle/nn-gpu-bundle.tar.xz}")
[ -f "$archive" ] || die "$archive: no archive (make it with scripts/gpu-bundle.sh)"
out=$(realpath -m "${NN_REHEARSAL_OUT:-$repo/out/gpu-rehearsal}")
rm -rf "$out" && mkdir -p "$out"
command -v debootstrap > /dev/null ||
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap > /dev/null; }
wheel_cache=${NN_WHEEL_CACHE:-/var/cache/nn-gpu-wheels}
mkdir -p "$wheel_cache"
for w in "${wheels[@]}"; do
  ls "$wheel_cache/$(echo "$w" | tr - _)"-*.whl > /dev/null 2>&1 && continue
  note "downloading the wheel $w"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$wheel_cache" "$w" ||
    die "could not download $w"
done

start=$(date +%s)
work=$(mktemp -d /var/tmp/nn-rehearsal.XXXXXX)
mkdir -p "$work/root"
unshare --mount --propagation private bash "$script" --inner "$work/root" "$archive" "$out" || true
if [ -n "$(awk -v d="$work/root" 'index($2, d "/") == 1' /proc/self/mounts)" ]; then
  die "mounts left under $work/root: not removing it"
fi
rm -rf --one-file-system "$work"

# ---- verdict -------------------------------------------------------------------------------------
results=$out/results.tsv
[ -f "$results" ] || die "the check wrote no results.tsv (see $out/check.log)"
fail=0
check() { # check STEP STATUS...: the step's status must be one of those given
  local step=$1 got
  shift
  got=$(awk -F'\t' -v s="$step" '$1 == s { print $2 }' "$results")
  if [[ " $* " == *" $got "* ]]; then
    echo "  ok   $step: $got"
  else
    echo "  FAIL $step: ${got:-missing} (expected $*)"
    fail=1
  fi
}
echo "gpu-rehearsal: results ($out/results.tsv):"
check libraries PASS
check host_kernel_math PASS
for step in cuda_tests backend_cuda_instances nccl_tests gradient_check_cuda training_cuda_vs_cpu \
            bf16_training_cuda variational_cuda_vs_cpu predict_tests_cuda cnn_cuda_vs_cpu \
            cnn_cuda_fastest benchmark sampled_1m_cuda; do
  check "$step" NO-DEVICE
done
# Without a CUDA-trained network the comparisons with it do not run; the root has no compiler nor
# pybind11, so the module cannot be built there.
for step in prediction_cuda_vs_cpu bf16_prediction_cuda stream_cuda graphs_cuda padded_rows_cuda \
            serve_cuda_32_clients python_cuda; do
  check "$step" NOT-RUN
done
# The bundle's relocated mpirun runs two CPU ranks in a root without Open MPI's packages.
check mpi_np2_cpu PASS
check mpi_np2_cuda NO-DEVICE
grep -q "^## Result" "$out/report.md" || { echo "  FAIL report.md has no Result section"; fail=1; }
[ -s "$out/logs.tar.xz" ] || { echo "  FAIL no logs.tar.xz"; fail=1; }
# Every test the bundle holds started and said why it skipped (a loader error would not).
tar -xJf "$out/logs.tar.xz" -C "$out"
for log in cuda-tests backend-cuda nccl; do
  grep -q "no CUDA device\|Skipped" "$out/logs/$log.log" || { echo "  FAIL logs/$log.log: no skip message"; fail=1; }
done
# The convolutional network's CPU run (the reference for the CUDA one) trained its 3 epochs.
grep -q "epoch 3/3" "$out/logs/cnn-cpu.log" || { echo "  FAIL logs/cnn-cpu.log: the CPU run did not finish"; fail=1; }
grep -q "epoch 3/3" "$out/logs/vae-cpu.log" || { echo "  FAIL logs/vae-cpu.log: the CPU run did not finish"; fail=1; }
grep -q "no CUDA device\|Skipped" "$out/logs/predict-tests.log" || { echo "  FAIL logs/predict-tests.log: no skip message"; fail=1; }
rm -rf "$out/logs"
echo "gpu-rehearsal: $([ $fail = 0 ] && echo PASS || echo FAIL) in $(($(date +%s) - start)) s"
exit $fail
