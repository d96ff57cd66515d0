#!/usr/bin/env bash
# Rehearses the GPU check here, without a GPU, before device time is spent on it: unpacks the
# archive of scripts/gpu-bundle.sh in a minimal Debian root that has none of this project's
# packages (debootstrap minbase, plus python3 and xz as the GPU machine's image has them), with the
# CUDA libraries taken from NVIDIA's Python wheels (installed into the root's site-packages, as on
# the GPU machine) rather than from this machine's toolkit, and runs both calls there with the
# time budget simulated (each step charged its estimate on an H100/H200):
#   scripts/gpu-check.sh --bundle ARCHIVE --call 1 --simulate
#   scripts/gpu-check.sh --bundle ARCHIVE --call 2 --simulate
# It passes when every binary loads, the CUDA module loads when asked for by its path, every step
# that needs a GPU says NO-DEVICE (not FAIL), the CPU references pass, every step of both calls
# was planned and started inside its budget with a limit no shorter than its estimate, and both
# calls wrote their files (scripts/gpu_check/rehearsal_verdict.py). It ends with one line per
# call: "call N: S s planned of L s, K steps".
#
# Usage (as root): scripts/gpu-rehearsal.sh [ARCHIVE]   (default out/gpu-bundle/nn-gpu-bundle.tar.xz)
#   NN_FRESH_CACHE   cached root tarball folder, shared with scripts/fresh-machine-check.sh
#                    (default /var/cache/nn-fresh-root)
#   NN_WHEEL_CACHE   downloaded wheels (default /var/cache/nn-gpu-wheels)
#   NN_REHEARSAL_OUT where each call's report, results and logs are copied (default
#                    out/gpu-rehearsal/call1, call2)
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
  mkdir -p "$root/rehearsal"
  cp "$archive" "$root/rehearsal/"
  cp -r "$repo/scripts/gpu_check" "$root/rehearsal/"
  local call rc
  for call in 1 2; do
    rc=0
    mkdir -p "$root/rehearsal/call$call"
    # NN_CNN_IMAGES: a smaller CIFAR set, so that the CPU reference trains in this root's few
    # cores within the step's limit (the GPU machine has 16).
    chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
      NN_CHECK_OUT="/rehearsal/call$call" NN_CNN_IMAGES=3000 python3 /rehearsal/gpu_check/main.py \
      --bundle "/rehearsal/$(basename "$archive")" --call "$call" --simulate \
      > "$out/call$call.log" 2>&1 || rc=$?
    mkdir -p "$out/call$call"
    cp -r "$root/rehearsal/call$call/." "$out/call$call/"
    note "call $call exited with $rc (1 expected: no step can pass without a GPU)"
  done
}

case "${1:-}" in
  --inner) shift; inner "$@"; exit $? ;;
  -h | --help) sed -n '2,24p' "$script" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
for call in 1 2; do
  [ -f "$out/call$call/results.tsv" ] || die "call $call wrote no results.tsv (see $out/call$call.log)"
done
rc=0
verdict=$(python3 "$repo/scripts/gpu_check/rehearsal_verdict.py" "$out/call1" "$out/call2") || rc=$?
grep -v '^call [12]:' <<< "$verdict"
echo "gpu-rehearsal: $([ $rc = 0 ] && echo PASS || echo FAIL) in $(($(date +%s) - start)) s"
grep '^call [12]:' <<< "$verdict"
exit $rc
