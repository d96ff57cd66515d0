#!/usr/bin/env bash
# Proves the README's two commands work on a fresh Debian machine: builds a minimal bookworm root
# with debootstrap (cached as a tarball), bind-mounts the host's CUDA toolkit read-only at its real
# path when there is one, makes a clean clone of a committed revision inside it, runs
#   bash scripts/setup.sh && bash samples/movielens/run.sh
#   bash scripts/test.sh
# there exactly as README.md states them, then (step 3) `pip install .` of the Python module in a
# virtual environment as docs/python.md says, importing it and running both Python samples with
# it; prints pass/fail with timings for each.
#
# Usage (as root): scripts/fresh-machine-check.sh [REVISION]     (default HEAD; committed state only)
#        scripts/fresh-machine-check.sh --self-test-cleanup      (checks the mount/removal guards)
# Environment:
#   NN_FRESH_CACHE   directory for the cached root tarball (default /var/cache/nn-fresh-root)
#   NN_FRESH_WORK    parent of the scratch root (default /var/tmp)
#   NN_FRESH_LOGS    where the step logs are kept (default /var/tmp/nn-fresh-logs/<time>)
#   NN_FRESH_MIRROR  Debian mirror (default: the first Debian URI apt already uses on this host)
#   NN_FRESH_KEEP=1  keep the root afterwards (its mounts are still removed)
#   NN_FRESH_DRY_RUN=1  run trivial commands instead of the README's (checks the machinery;
#                    =sleep runs a long sleep, to try stopping a run with Ctrl-C or kill)
#
# Safety: `rm -rf` of a root that still has a host directory bind-mounted inside it deletes the
# host's files. So (1) everything that mounts runs in a private mount namespace (unshare), whose
# mounts vanish when it exits and are never visible to the process that deletes the root; (2) host
# trees are bound read-only; (3) a trap unmounts everything under the root on every exit path; and
# (4) the root is removed only when /proc/self/mounts shows nothing under it, with
# `rm --one-file-system`.
set -euo pipefail

script=$(readlink -f "$0")
suite="bookworm"
debian_path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

die() {
  echo "fresh-machine-check: error: $*" >&2
  exit 1
}
note() { echo "fresh-machine-check: $*"; }

# mounts_under DIR: mount points at DIR or below it (this namespace), deepest first. /proc/mounts
# writes spaces etc. as octal escapes; the roots made here never contain such characters.
mounts_under() {
  local dir=${1%/}
  awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print length($2) "\t" $2 }' /proc/self/mounts |
    sort -rn | cut -f2-
}

# unmount_under DIR: unmounts everything at or below DIR, deepest first; a busy mount is detached
# lazily (it leaves the tree at once, so nothing below DIR reaches it any more). Returns 1 if
# anything is still mounted afterwards.
unmount_under() {
  local dir=$1 m pass
  for pass in 1 2 3; do
    while IFS= read -r m; do
      [ -n "$m" ] || continue
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done < <(mounts_under "$dir")
    [ -z "$(mounts_under "$dir")" ] && return 0
  done
  return 1
}

# safe_remove DIR: deletes DIR only when nothing is mounted at or below it; otherwise refuses
# (status 1) and lists the mounts.
safe_remove() {
  local dir=$1 left
  [ -e "$dir" ] || return 0
  case "$(readlink -f "$dir")" in
    / | /usr | /var | /var/tmp | /tmp | /home | /root | /work | "") die "refusing to remove '$dir'" ;;
  esac
  left=$(mounts_under "$dir")
  if [ -n "$left" ]; then
    echo "fresh-machine-check: error: NOT removing $dir: still mounted under it:" >&2
    echo "$left" | sed 's/^/  /' >&2
    return 1
  fi
  rm -rf --one-file-system -- "$dir"
}

# bind_ro SRC DST: read-only bind mount (a plain bind, then a read-only remount of it).
bind_ro() {
  mkdir -p "$2"
  mount --bind "$1" "$2"
  mount -o remount,bind,ro "$2"
}

# rbind_ro SRC DST: SRC and every mount below it, each read-only (a recursive bind, then a
# read-only remount of each mount it made).
rbind_ro() {
  mkdir -p "$2"
  mount --rbind "$1" "$2"
  local m
  for m in $(awk -v d="$2" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts); do
    mount -o remount,bind,ro "$m"
  done
}

host_mirror() {
  local uri
  uri=$( (cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true) |
    awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }')
  [ -n "$uri" ] || uri=$( (cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true) |
    awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }')
  echo "${uri:-http://deb.debian.org/debian}"
}

elapsed() {  # elapsed START: seconds since START as MmSSs
  local s=$(($(date +%s) - $1))
  printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# ---- inner stage: runs in a private mount namespace --------------------------------------------
step_pid=""
# stop_step: ends the running step's process group (started by this script with setsid) and
# waits for it, so nothing runs in the root when it is unmounted.
stop_step() {
  [ -n "$step_pid" ] || return 0
  kill -TERM -- "-$step_pid" 2>/dev/null || true
  wait "$step_pid" 2>/dev/null || true
  step_pid=""
}

inner() {
  local root=$1 logs=$2 repo=$3 rev=$4
  local cache=${NN_FRESH_CACHE:-/var/cache/nn-fresh-root}
  local tarball="$cache/$suite-minbase.tar.gz"
  # The trap runs after this function has returned: it names the root through a global.
  inner_root=$root
  trap 'unmount_under "$inner_root" ||
    echo "fresh-machine-check: error: could not unmount everything under $inner_root" >&2' EXIT
  trap 'stop_step; exit 130' INT
  trap 'stop_step; exit 143' TERM
  # Nothing mounted here may propagate back to the host's namespace.
  mount --make-rprivate /

  local t0 mirror
  t0=$(date +%s)
  mirror=${NN_FRESH_MIRROR:-$(host_mirror)}
  if [ -f "$tarball" ]; then
    note "root: unpacking cached $tarball"
    tar -xpzf "$tarball" --numeric-owner -C "$root"
    echo "root	cached	$(elapsed "$t0")" >>"$logs/results.tsv"
  else
    note "root: debootstrap --variant=minbase $suite from $mirror (cached afterwards)"
    if ! debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$logs/debootstrap.log" 2>&1; then
      echo "root	FAIL	$(elapsed "$t0")" >>"$logs/results.tsv"
      tail -20 "$logs/debootstrap.log" >&2
      die "debootstrap failed (log: $logs/debootstrap.log)"
    fi
    # debootstrap may leave its own /proc and /sys mounts; the tarball must hold plain files only.
    unmount_under "$root" || die "could not unmount debootstrap's mounts under $root"
    mkdir -p "$cache"
    tar -cpzf "$tarball.tmp.$$" --numeric-owner -C "$root" . && mv "$tarball.tmp.$$" "$tarball"
    echo "root	debootstrap	$(elapsed "$t0")" >>"$logs/results.tsv"
  fi

  # apt inside a chroot as root: its sandbox user _apt cannot be used there.
  echo 'APT::Sandbox::User "root";' >"$root/etc/apt/apt.conf.d/99sandbox-root"
  # Same package sources as the host (a fresh machine of this kind has main, updates, security).
  if ls /etc/apt/sources.list.d/debian.sources >/dev/null 2>&1; then
    cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/debian.sources"
    : >"$root/etc/apt/sources.list"
  fi
  # A snapshot mirror's Release files may be past their Valid-Until: take the host's settings.
  apt-config dump 2>/dev/null | grep -E '^Acquire::Check-(Valid-Until|Date) ' \
    >"$root/etc/apt/apt.conf.d/99host-validity" || true
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"

  mount -t proc proc "$root/proc"
  bind_ro /sys "$root/sys"
  # A booted Debian has its cgroups mounted under /sys/fs/cgroup (their own mounts, which a
  # plain bind of /sys leaves out); slurmd will not start without them (tool.mpi_slurm_requeue).
  [ -d /sys/fs/cgroup ] && mountpoint -q /sys/fs/cgroup && rbind_ro /sys/fs/cgroup "$root/sys/fs/cgroup"
  bind_ro /dev/pts "$root/dev/pts"
  mkdir -p "$root/dev/shm"
  mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"  # Open MPI's shared-memory transport

  local nvcc cuda="" link
  nvcc=$(command -v nvcc || true)
  [ -n "$nvcc" ] || for c in /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc; do
    [ -x "$c" ] && nvcc=$c && break
  done
  if [ -n "$nvcc" ]; then
    cuda=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
    bind_ro "$cuda" "$root$cuda"
    # The usual /usr/local/cuda -> cuda-X.Y link, as on the host.
    if [ -L /usr/local/cuda ] && [ "$(readlink -f /usr/local/cuda)" = "$cuda" ]; then
      link=$(readlink /usr/local/cuda)
      ln -sfn "$link" "$root/usr/local/cuda"
    fi
    note "CUDA toolkit $cuda bound read-only"
  else
    note "no CUDA toolkit on this host: the CPU-only build is checked"
  fi

  note "clone of $rev ($(git -C "$repo" log -1 --format='%h %s' "$rev"))"
  mkdir -p "$root/root"
  git clone --quiet --no-hardlinks --no-checkout "$repo" "$root/root/nn"
  git -C "$root/root/nn" checkout --quiet --detach "$rev"

  mount | grep -F " $root" | sed 's/^/  mounted: /'

  # pip in the root reaches the package index the way the host's pip does: the CA bundle the
  # host's pip trusts (PIP_CERT, or pip's configured global.cert; where a TLS-inspecting proxy's
  # certificate lives) is copied in and named in the root's /etc/pip.conf.
  local host_ca=${PIP_CERT:-$(python3 -m pip config --global get global.cert 2>/dev/null || true)}
  if [ -n "$host_ca" ] && [ -f "$host_ca" ]; then
    cp "$host_ca" "$root/etc/nn-host-ca.crt"
    printf '[global]\ncert = /etc/nn-host-ca.crt\n' >"$root/etc/pip.conf"
    note "pip in the root trusts the host's CA bundle ($host_ca)"
  fi

  local step cmd start status all=0
  for step in 1 2 3; do
    case $step in
      1) cmd="bash scripts/setup.sh && bash samples/movielens/run.sh" ;;
      2) cmd="bash scripts/test.sh" ;;
      # The Python module as docs/python.md installs it (pip, in a virtual environment that sees
      # Debian's NumPy/SciPy), then both Python samples with that interpreter, outside the tree.
      3) cmd="python3 -m venv --system-site-packages /root/nnsuite-env &&
              /root/nnsuite-env/bin/pip install . &&
              (cd / && /root/nnsuite-env/bin/python -c 'import nnsuite; print(nnsuite.__file__)') &&
              /root/nnsuite-env/bin/python samples/movielens/train.py --epochs 2 -o /root/py-work &&
              /root/nnsuite-env/bin/python samples/movielens/serve.py /root/py-work/network.nc" ;;
    esac
    # A dry run checks the machinery (root, mounts, clone, clean-up) in a minute or two.
    case "${NN_FRESH_DRY_RUN:-0}" in
      1) cmd="test -f README.md && test -x scripts/setup.sh" ;;
      sleep) cmd="sleep 300" ;;  # for testing an interrupted run
    esac
    cmd=$(printf '%s' "$cmd" | tr -s ' \n' '  ')  # one line: results.tsv has a row per step
    note "step $step: $cmd"
    start=$(date +%s)
    status=0
    # In its own process group and waited for in the background, so that a TERM to this stage
    # stops the whole step (make, compilers, tests) at once instead of after it ends.
    setsid chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb PATH="$debian_path" \
      bash -c "cd /root/nn && $cmd" >"$logs/step$step.log" 2>&1 &
    step_pid=$!
    wait "$step_pid" || status=$?
    step_pid=""
    if [ $status = 0 ]; then
      echo "step$step	PASS	$(elapsed "$start")	$cmd" >>"$logs/results.tsv"
    else
      all=1
      echo "step$step	FAIL(status $status)	$(elapsed "$start")	$cmd" >>"$logs/results.tsv"
      tail -30 "$logs/step$step.log" | sed "s/^/  step$step| /"
    fi
    tail -5 "$logs/step$step.log" | sed "s/^/  step$step| /"
  done
  unmount_under "$root" || die "could not unmount everything under $root"
  return $all
}

# ---- self-test of the guards, in a throw-away mount namespace ------------------------------------
self_test_cleanup() {
  local t host root
  t=$(mktemp -d /var/tmp/nn-fresh-selftest.XXXXXX)
  selftest_dir=$t
  trap 'unmount_under "$selftest_dir"; safe_remove "$selftest_dir"' EXIT
  host="$t/host"
  root="$t/root"
  mkdir -p "$host/tree" "$host/rw" "$root/bound" "$root/bound-rw"
  echo keep >"$host/tree/canary"
  echo keep >"$host/rw/canary"
  echo mine >"$root/own-file"
  bind_ro "$host/tree" "$root/bound"
  # A writable bind is what a careless removal would delete through: the guard must stop it.
  mount --bind "$host/rw" "$root/bound-rw"
  mkdir -p "$root/proc"
  mount -t proc proc "$root/proc"
  # A read-only bind cannot be written through.
  if echo x 2>/dev/null >"$root/bound/canary"; then die "self-test: read-only bind is writable"; fi
  # Removal must refuse while anything is mounted, and leave the host's file alone.
  if safe_remove "$root" 2>/dev/null; then die "self-test: removal went ahead with mounts inside"; fi
  [ "$(cat "$host/tree/canary")" = keep ] || die "self-test: host file lost"
  [ -f "$root/own-file" ] || die "self-test: root's files removed although mounts were refused"
  [ "$(cat "$host/rw/canary")" = keep ] || die "self-test: host file behind a writable bind lost"
  unmount_under "$root" || die "self-test: mounts left under $root"
  [ -z "$(mounts_under "$root")" ] || die "self-test: /proc/self/mounts still lists mounts"
  safe_remove "$root" || die "self-test: removal refused after unmounting"
  [ ! -e "$root" ] || die "self-test: root still there"
  [ "$(cat "$host/tree/canary")" = keep ] && [ "$(cat "$host/rw/canary")" = keep ] ||
    die "self-test: host file lost"
  # A failing step inside a stage with the stage's trap leaves nothing mounted.
  mkdir -p "$t/root2/bound"
  (
    trap 'unmount_under "$t/root2"' EXIT
    bind_ro "$host/tree" "$t/root2/bound"
    false
  ) || true
  [ -z "$(mounts_under "$t/root2")" ] || die "self-test: a failed stage left mounts"
  safe_remove "$t/root2" || die "self-test: removal refused after a failed stage"
  [ "$(cat "$host/tree/canary")" = keep ] || die "self-test: host file lost"
  echo "fresh-machine-check: self-test passed (read-only binds, refusal while mounted, unmount on failure, removal)"
}

# ---- outer stage --------------------------------------------------------------------------------
case "${1:-}" in
  --inner)
    shift
    inner "$@"
    exit $?
    ;;
  --self-test-cleanup-inner)
    self_test_cleanup
    exit 0
    ;;
  --self-test-cleanup)
    [ "$(id -u)" = 0 ] || die "needs root (mounts)"
    exec unshare --mount --propagation private bash "$script" --self-test-cleanup-inner
    ;;
  -h | --help)
    sed -n '2,25p' "$script" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, mounts, chroot)"
repo=$(git -C "$(dirname "$script")/.." rev-parse --show-toplevel)
rev=$(git -C "$repo" rev-parse --verify "${1:-HEAD}^{commit}") || die "no such revision: ${1:-HEAD}"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  note "note: uncommitted changes in $repo are not part of the check (clean clone of $rev)"
fi
if ! command -v debootstrap >/dev/null; then
  note "installing debootstrap"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi
command -v unshare >/dev/null || die "needs unshare (util-linux)"

work=$(mktemp -d "${NN_FRESH_WORK:-/var/tmp}/nn-fresh.XXXXXX")
root="$work/root"
mkdir -p "$root"
logs=${NN_FRESH_LOGS:-/var/tmp/nn-fresh-logs/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$logs"
: >"$logs/results.tsv"

inner_pid=""
finish() {
  local status=$?
  trap - EXIT INT TERM
  if [ -n "$inner_pid" ] && kill -0 "$inner_pid" 2>/dev/null; then
    kill -TERM "$inner_pid" 2>/dev/null || true
    wait "$inner_pid" 2>/dev/null || true
  fi
  # The mounts lived in the inner namespace; this one should see none. Check anyway.
  unmount_under "$root" || true
  if [ "${NN_FRESH_KEEP:-0}" = 1 ]; then
    note "root kept at $root"
  elif ! safe_remove "$work"; then
    status=1
  fi
  exit $status
}
trap finish EXIT
trap 'note "interrupted; cleaning up"; exit 130' INT
trap 'note "stopped; cleaning up"; exit 143' TERM

note "revision $rev; root $root; logs $logs"
total=$(date +%s)
status=0
unshare --mount --propagation private bash "$script" --inner "$root" "$logs" "$repo" "$rev" &
inner_pid=$!
wait "$inner_pid" || status=$?
inner_pid=""

echo
echo "== fresh-machine-check: $(git -C "$repo" log -1 --format='%h %s' "$rev")"
while IFS=$'\t' read -r what result took cmd; do
  case $what in
    root) printf '  %-6s %-22s %8s  minbase %s root\n' "$what" "$result" "$took" "$suite" ;;
    *) printf '  %-6s %-22s %8s  %s\n' "$what" "$result" "$took" "$cmd" ;;
  esac
done <"$logs/results.tsv"
echo "  total  $(elapsed "$total"); logs in $logs"
if [ $status = 0 ] && [ "$(grep -c '^step[0-9]*	PASS' "$logs/results.tsv")" = 3 ]; then
  echo "== PASS"
else
  echo "== FAIL"
  status=1
fi
exit $status
