#!/usr/bin/env bash
# Checks `nn-train --plan 2` against real two-rank training over shaped links (docs/scaling.md,
# "Checking the predictions on shaped links"). Two network namespaces joined through the root
# namespace act as two hosts; each direction of their link is shaped to a bandwidth and a one-way
# delay (tc netem on a bridge where the kernel has netem, else scripts/lib/link_relay.c, a user
# space relay that forwards the frames as such a wire would deliver them). Open MPI runs one rank
# in each namespace over TCP (btl tcp,self), launching the second "host" through `ip netns exec`.
# The `loopback` link is one host without namespaces, still over TCP (no shared memory).
# For each link the script first verifies it: a TCP probe's round trip and rate, an MPI
# ping-pong's latency and bandwidth, and that the ping-pong's bytes crossed the namespaces'
# interfaces. Then, for each network (the MovieLens-20M-shaped autoencoder with 1x128 and 3x1024
# hidden units, and an autoencoder over a 1,000,000-item catalog) and each mode (every layer data
# parallel, every layer model parallel, and what the per-layer rule picks), it compares
# `nn-train --plan 2 --link L` with the epoch time of `mpirun -np 2 nn-train` (the mean of the
# epochs after the first). L is the link as `nn-train --measure-link` measured it between the two
# ranks, or, with a build without --measure-link, the --link preset nearest to the ping-pong's
# figures. Prints markdown tables (stdout; progress on stderr): the links, then per network, link
# and mode the predicted and measured epoch, and whether the rule picked the faster mode.
# Each rank is pinned to half of the CPUs (taskset) and the plans are timed with as many threads.
#
# Usage: scripts/check_scaling_netns.sh [--links "1g-200us 10g-50us loopback"]
#          [--networks "1x128 3x1024 million"] [--quick] [--dry-run] [--keep DIR]
#   --links     link profiles: RATE-DELAY (RATE in m or g bit/s, DELAY one-way in us, e.g.
#               1g-200us, 10g-50us, 100m-1000us) or loopback
#   --networks  1x128, 3x1024 (27,278 items, ~144 per example) and million (1,000,000 items)
#   --quick     tiny sizes (mechanics only: the timings mean nothing)
#   --dry-run   set up and verify the links only, with short probes; no training (CTest)
#   --keep DIR  keep the logs, plans, link files and tables in DIR (default: a temporary folder,
#               removed)
# Environment: NN_TOOLS (nn-train and nn-generate; default build/src/tools), NN_CHECK_EPOCHS
#   (default 3; the first is left out of the mean), NN_CHECK_EXAMPLES_1X128 (32768),
#   NN_CHECK_EXAMPLES_3X1024 (4096), NN_CHECK_EXAMPLES_MILLION (1024), NN_CHECK_BATCH (256),
#   NN_CHECK_BATCH_MILLION (128), NN_CHECK_PLAN_STEPS (10; nn-train --plan-steps where the build
#   has it), NN_CHECK_PLAN_LINK (auto: measured when the build has --measure-link, else the
#   nearest preset; preset: always the nearest preset; or a preset name or a link file for every
#   link), NN_CHECK_SHAPER (auto, netem or relay), NN_CHECK_RANK_CPUS (the CPU lists of ranks 0
#   and 1, e.g. "0-7 8-15"; default: the halves of this process's CPUs), NN_CHECK_PRIORITY
#   (normal, or rt: ranks and plans SCHED_FIFO, for a busy machine of your own),
#   NN_CHECK_RUN_TIMEOUT (seconds per mpirun, default 3600), NN_CHECK_LINK_MAX (bytes: the
#   largest message --measure-link times; default the largest weight array of the networks
#   checked, 0 with --quick; for builds with --measure-link-max).
# Exit status: 0 = every link verified and, with training, every prediction within 25% of the
# measurement and the rule's pick the faster (or within 5% of it); 1 = a check failed (the
# tables say which); 2 = usage or setup error; 77 = cannot run here (not root, no network
# namespaces, no Open MPI or compiler), with the reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
me=check_scaling_netns
tools=${NN_TOOLS:-$root/build/src/tools}
links="1g-200us 10g-50us loopback"
networks="1x128 3x1024 million"
quick=0 dry=0 keep=""
usage() {  # usage STATUS: the header's usage and environment, to stderr unless STATUS is 0
  if [ "$1" = 0 ]; then
    sed -n '/^# Usage:/,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//'
  else
    sed -n '/^# Usage:/,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//' >&2
  fi
  exit "$1"
}
while [ $# -gt 0 ]; do
  case $1 in
    --links | --networks | --keep)
      [ $# -ge 2 ] || { echo "$me: $1 needs a value" >&2; usage 2; }
      case $1 in
        --links) links=$2 ;;
        --networks) networks=$2 ;;
        *) keep=$2 ;;
      esac
      shift 2
      ;;
    --quick) quick=1; shift ;;
    --dry-run) dry=1; shift ;;
    -h | --help) usage 0 ;;
    *) echo "$me: unknown argument '$1'" >&2; usage 2 ;;
  esac
done
note() { echo "$me: $*" >&2; }
die() {
  echo "$me: error: $*" >&2
  exit 2
}
skip() {
  echo "$me: SKIP: $*" >&2
  exit 77
}

# ---- settings -----------------------------------------------------------------------------------
epochs=${NN_CHECK_EPOCHS:-3}
declare -A examples=([1x128]=${NN_CHECK_EXAMPLES_1X128:-32768} [3x1024]=${NN_CHECK_EXAMPLES_3X1024:-4096}
                     [million]=${NN_CHECK_EXAMPLES_MILLION:-1024})
batch=${NN_CHECK_BATCH:-256} batch_million=${NN_CHECK_BATCH_MILLION:-128}
plan_steps=${NN_CHECK_PLAN_STEPS:-10}
probe_mb=64 pingpong_repeats=200
if [ $quick = 1 ] || [ $dry = 1 ]; then
  examples=([1x128]=512 [3x1024]=256 [million]=256)
  epochs=${NN_CHECK_EPOCHS:-2} plan_steps=3 probe_mb=8 pingpong_repeats=40
fi
run_timeout=${NN_CHECK_RUN_TIMEOUT:-3600}
# The largest gradient a network checked reduces in one message (items x first hidden width).
largest_array() {
  local max=0 bytes n
  for n in $networks; do
    case $n in
      1x128) bytes=$((27278 * 128 * 4)) ;;
      3x1024) bytes=$((27278 * 1024 * 4)) ;;
      million) bytes=$((1000000 * 128 * 4)) ;;
      *) bytes=0 ;;
    esac
    [ "$bytes" -gt "$max" ] && max=$bytes
  done
  echo "$max"
}
link_max=${NN_CHECK_LINK_MAX:-$([ $quick = 1 ] && echo 0 || largest_array)}
plan_link_choice=${NN_CHECK_PLAN_LINK:-auto}
shaper=${NN_CHECK_SHAPER:-auto}
for n in $networks; do
  [[ -n ${examples[$n]:-} ]] || die "unknown network '$n' (1x128, 3x1024 or million)"
done
# profile NAME -> "DELAY_US RATE_BIT_PER_S" (loopback: "loopback")
profile() {
  [ "$1" = loopback ] && { echo loopback; return; }
  [[ $1 =~ ^([0-9]+(\.[0-9]+)?)([mMgG])-([0-9]+(\.[0-9]+)?)us$ ]] ||
    die "link '$1' is not RATE-DELAY (e.g. 1g-200us, 100m-1000us) or loopback"
  local unit=1000000
  [[ ${BASH_REMATCH[3]} == [gG] ]] && unit=1000000000
  python3 -c "print(${BASH_REMATCH[4]}, int(${BASH_REMATCH[1]} * $unit))"
}
# ---- what this machine must have ----------------------------------------------------------------
[ "$(id -u)" = 0 ] || skip "network namespaces and link shaping need root"
for p in ip mpirun mpicc cc python3 taskset; do
  command -v $p >/dev/null || skip "no $p on PATH (needs iproute2, Open MPI with mpicc, a C compiler, Python 3)"
done
if [ $dry = 0 ]; then
  for t in nn-train nn-generate; do
    [ -x "$tools/$t" ] || die "no $tools/$t: build the tools (scripts/setup.sh) or set NN_TOOLS"
  done
fi
mpirun --version 2>/dev/null | grep -q "Open MPI" ||
  skip "mpirun is not Open MPI (the launch uses Open MPI's rsh agent and MCA options)"
for l in $links; do profile "$l" >/dev/null; done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NN_MPI_TIMEOUT=${NN_MPI_TIMEOUT:-600}

# ---- scratch, names and clean-up ----------------------------------------------------------------
work=$(mktemp -d /tmp/$me.XXXXXX)
tag=nsc$$
ns_a=${tag}a ns_b=${tag}b root_a=${tag}a root_b=${tag}b bridge=${tag}br
subnet=10.78.0.0/24 addr_a=10.78.0.1 addr_b=10.78.0.2 port=5201
relay_pid="" server_pid="" kind=""
teardown_link() {
  if [ -n "$relay_pid" ]; then
    kill "$relay_pid" 2>/dev/null || true
    wait "$relay_pid" 2>/dev/null || true
    relay_pid=""
  fi
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
  # Deleting a namespace deletes its veth ends, and with them their peers in this namespace.
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  ip link del "$root_a" 2>/dev/null || true
  ip link del "$root_b" 2>/dev/null || true
  ip link del "$bridge" 2>/dev/null || true
  kind=""
}
cleanup() {
  teardown_link
  if [ -n "$keep" ]; then
    mkdir -p "$keep"
    cp -r "$work"/. "$keep"/ 2>/dev/null || true
    note "logs, plans and tables kept in $keep"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- CPUs of the ranks --------------------------------------------------------------------------
read -r cpus0 cpus1 threads < <(python3 - "${NN_CHECK_RANK_CPUS:-}" <<'PY'
import os, sys
given = sys.argv[1].split()
if given:
    def count(spec):
        n = 0
        for part in spec.split(","):
            a, _, b = part.partition("-")
            n += int(b or a) - int(a) + 1
        return n
    print(given[0], given[1], min(count(given[0]), count(given[1])))
else:
    cpus = sorted(os.sched_getaffinity(0))
    half = max(1, len(cpus) // 2)
    a, b = cpus[:half], cpus[half:2 * half] or cpus[:half]
    print(",".join(map(str, a)), ",".join(map(str, b)), len(a))
PY
)
[ "$cpus0" != "$cpus1" ] || note "warning: one CPU only: both ranks share CPU $cpus0"
# How the ranks, the plans and the one-process runs start: NN_CHECK_PRIORITY=rt runs them
# SCHED_FIFO (below the relay), so that a rank polling for a message keeps its CPU where other
# work shares the CPUs (a busy machine otherwise adds milliseconds to every message); it starves
# that other work, so use it only on a machine of your own. The links' MPI ping-pong always runs
# so: it checks the link, not the host.
case ${NN_CHECK_PRIORITY:-normal} in
  normal) prio=() ;;
  rt) prio=(chrt -f 10) ;;
  *) die "NN_CHECK_PRIORITY must be normal or rt" ;;
esac
chrt -f 10 true 2>/dev/null || { [ ${#prio[@]} = 0 ] || die "chrt -f refused: NN_CHECK_PRIORITY=rt cannot work here"; }

# ---- helpers built here -------------------------------------------------------------------------
cc -O2 -Wall -pthread -o "$work/link_relay" "$root/scripts/lib/link_relay.c" ||
  die "cannot compile scripts/lib/link_relay.c"
mpicc -O2 -o "$work/mpi_pingpong" "$root/scripts/lib/mpi_pingpong.c" ||
  die "cannot compile scripts/lib/mpi_pingpong.c with mpicc"
# The launcher's "ssh": runs the command for a host address inside that address's namespace.
cat >"$work/agent.sh" <<AGENT
#!/bin/sh
host=\$1
shift
case \$host in
  $addr_a) ns=$ns_a ;;
  $addr_b) ns=$ns_b ;;
  *) echo "$me agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
chmod +x "$work/agent.sh"
printf '%s slots=1\n%s slots=1\n' $addr_a $addr_b >"$work/hosts"
has_measure_link=0 has_measure_link_max=0 has_plan_steps=0
if [ $dry = 0 ]; then
  help=$("$tools/nn-train" --help 2>&1)
  grep -q -- --measure-link <<<"$help" && has_measure_link=1
  grep -q -- --measure-link-max <<<"$help" && has_measure_link_max=1
  grep -q -- --plan-steps <<<"$help" && has_plan_steps=1
fi
load() { cut -d' ' -f1 /proc/loadavg; }

# ---- links --------------------------------------------------------------------------------------
# setup_link NAME: makes the link current (kind=netns or loopback).
setup_link() {
  local name=$1 spec delay rate
  spec=$(profile "$name")
  if [ "$spec" = loopback ]; then
    kind=loopback shaping="TCP over lo, not shaped"
    return
  fi
  read -r delay rate <<<"$spec"
  local err
  if ! err=$(ip netns add "$ns_a" 2>&1) || ! err=$(ip netns add "$ns_b" 2>&1); then
    skip "this machine refuses network namespaces (ip netns add: $err)"
  fi
  kind=netns
  ip link add va netns "$ns_a" type veth peer name "$root_a" ||
    die "cannot create a veth pair (ip link add ... type veth)"
  ip link add vb netns "$ns_b" type veth peer name "$root_b"
  ip -n "$ns_a" addr add $addr_a/24 dev va
  ip -n "$ns_b" addr add $addr_b/24 dev vb
  for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
  ip -n "$ns_a" link set va up
  ip -n "$ns_b" link set vb up
  for r in "$root_a" "$root_b"; do
    sysctl -qw "net.ipv6.conf.$r.disable_ipv6=1" 2>/dev/null || true  # no stray IPv6 frames
    ip link set "$r" up
  done
  local use=$shaper
  if [ "$use" = auto ]; then
    use=relay
    if tc qdisc add dev "$root_a" root netem delay 1us 2>/dev/null; then
      tc qdisc del dev "$root_a" root
      use=netem
    fi
  fi
  case $use in
    netem)
      # root_a's egress enters namespace A, root_b's enters B: each direction shaped once.
      ip link add "$bridge" type bridge
      ip link set "$root_a" master "$bridge"
      ip link set "$root_b" master "$bridge"
      ip link set "$bridge" up
      for r in "$root_a" "$root_b"; do
        tc qdisc add dev "$r" root netem delay "${delay}us" rate "${rate}bit" limit 100000 ||
          die "tc netem refused on $r"
      done
      shaping="tc netem, ${delay} us each way, $rate bit/s"
      ;;
    relay)
      local chrt=(chrt -f 50)  # real-time: frames leave on time while the ranks spin
      "${chrt[@]}" true 2>/dev/null || { chrt=(); note "warning: no SCHED_FIFO; relay timing may lag"; }
      "${chrt[@]}" "$work/link_relay" "$root_a" "$root_b" "$delay" "$rate" \
        "$work/relay-$name.txt" 2>"$work/relay-$name.err" &
      relay_pid=$!
      sleep 0.3
      kill -0 "$relay_pid" 2>/dev/null || die "link_relay failed: $(cat "$work/relay-$name.err")"
      shaping="link_relay (no netem in this kernel), ${delay} us each way, $rate bit/s"
      ;;
    *) die "NN_CHECK_SHAPER must be auto, netem or relay, not '$use'" ;;
  esac
}

# mpi LOG CMD...: CMD as ranks 0 and 1 over the current link, each pinned to its CPUs; stderr to
# LOG, stdout through.
mpi() {
  local log=$1
  shift
  local common=(--bind-to none --mca btl "tcp,self" -x PATH -x NN_MPI_TIMEOUT)
  [ -n "${LD_LIBRARY_PATH:-}" ] && common+=(-x LD_LIBRARY_PATH)
  local apps=(-np 1 "${prio[@]}" taskset -c "$cpus0" "$@" : -np 1 "${prio[@]}" taskset -c "$cpus1" "$@")
  if [ "$kind" = netns ]; then
    ip netns exec "$ns_a" timeout "$run_timeout" mpirun "${common[@]}" --hostfile "$work/hosts" \
      --mca plm_rsh_agent "$work/agent.sh" --mca btl_tcp_if_include $subnet \
      --mca oob_tcp_if_include $subnet "${apps[@]}" 2>"$log"
  else
    timeout "$run_timeout" mpirun "${common[@]}" --oversubscribe --mca btl_tcp_if_include lo \
      "${apps[@]}" 2>"$log"
  fi
}

# Bytes sent so far by the interfaces the ranks talk through.
link_bytes() {
  if [ "$kind" = netns ]; then
    echo $(($(ip netns exec "$ns_a" cat /sys/class/net/va/statistics/tx_bytes) +
            $(ip netns exec "$ns_b" cat /sys/class/net/vb/statistics/tx_bytes)))
  else
    cat /sys/class/net/lo/statistics/tx_bytes
  fi
}

failures=0
fail() {
  note "FAILED: $*"
  failures=$((failures + 1))
}

# verify_link NAME: probe the current link and append a row to verify.tsv; sets mpi_latency_us
# and mpi_MBps (for the nearest preset).
verify_link() {
  local name=$1 spec delay=0 rate=0 l
  spec=$(profile "$name")
  [ "$spec" != loopback ] && read -r delay rate <<<"$spec"
  l=$(load)
  # TCP: round trip of 1 byte, rate of a bulk transfer.
  local server=(python3 "$root/scripts/lib/link_probe.py" serve "$port")
  local client=(python3 "$root/scripts/lib/link_probe.py" probe)
  if [ "$kind" = netns ]; then
    ip netns exec "$ns_b" "${server[@]}" &
    server_pid=$!
    tcp=$(ip netns exec "$ns_a" timeout 120 "${client[@]}" $addr_b $port $probe_mb) ||
      die "the TCP probe across the namespaces failed"
  else
    "${server[@]}" &
    server_pid=$!
    tcp=$(timeout 120 "${client[@]}" 127.0.0.1 $port $probe_mb) || die "the TCP probe on loopback failed"
  fi
  wait "$server_pid" || true
  server_pid=""
  local rtt tcp_rate
  read -r _ rtt _ tcp_rate <<<"$tcp"
  # MPI: where the ranks run, then the ping-pong, counting the bytes the interfaces sent.
  local where
  where=$(mpi "$work/placement-$name.log" sh -c \
    'echo "rank $OMPI_COMM_WORLD_RANK: $(ip -4 -o addr show | grep -v " lo " | grep -o "inet [0-9.]*" | head -1)"') ||
    die "mpirun could not start two ranks over $name: $(tail -5 "$work/placement-$name.log")"
  if [ "$kind" = netns ]; then
    if ! grep -q "rank 0: inet $addr_a" <<<"$where" || ! grep -q "rank 1: inet $addr_b" <<<"$where"; then
      fail "$name: the ranks did not run one in each namespace: ${where//$'\n'/; }"
    fi
  fi
  local before after pp prio=(chrt -f 10)
  chrt -f 10 true 2>/dev/null || prio=()
  before=$(link_bytes)
  pp=$(mpi "$work/pingpong-$name.log" "$work/mpi_pingpong" $pingpong_repeats) ||
    die "the MPI ping-pong over $name failed: $(tail -5 "$work/pingpong-$name.log")"
  after=$(link_bytes)
  local lat mbps ar_small ar_big bulk
  read -r _ lat _ mbps _ ar_small _ ar_big _ bulk <<<"$pp"
  local moved=$(((after - before) / 1000000)) least=$((bulk / 1000000))
  [ "$moved" -ge "$least" ] ||
    fail "$name: the interfaces sent $moved MB during the ping-pong, which moved $least MB: MPI bypassed the link"
  if [ "$spec" != loopback ]; then
    local nominal_MBps
    nominal_MBps=$(python3 -c "print(round($rate / 8e6))")
    python3 - "$name" "$delay" "$nominal_MBps" "$rtt" "$tcp_rate" "$lat" "$mbps" <<'PY' ||
import sys
name, delay, nominal, rtt, rate, lat, mpi_rate = sys.argv[1], *map(float, sys.argv[2:])
bad = []
if rtt < 1.8 * delay:
    bad.append(f"TCP round trip {rtt:.0f} us < 2 x {delay:.0f} us: the delay is not applied")
if lat < 0.9 * delay:
    bad.append(f"MPI one-way latency {lat:.0f} us < {delay:.0f} us: MPI bypassed the delay")
if rate > 1.1 * nominal:
    bad.append(f"TCP rate {rate:.0f} MB/s > {nominal:.0f} MB/s: the rate is not limited")
if mpi_rate > 1.1 * nominal:
    bad.append(f"MPI rate {mpi_rate:.0f} MB/s > {nominal:.0f} MB/s: MPI bypassed the rate limit")
for b in bad:
    print(f"check_scaling_netns: FAILED: {name}: {b}", file=sys.stderr)
if rate < 0.7 * nominal:
    print(f"check_scaling_netns: warning: {name}: TCP reached {rate:.0f} of {nominal:.0f} MB/s "
          "(a busy machine?)", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
      failures=$((failures + 1))
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$shaping" "$rtt" "$tcp_rate" \
    "$lat" "$mbps" "$ar_small" "$ar_big" "$moved" "$l" >>"$work/verify.tsv"
  mpi_latency_us=$lat mpi_MBps=$mbps
  note "$name: TCP round trip $rtt us, $tcp_rate MB/s; MPI latency $lat us, $mbps MB/s," \
    "all-reduce of 8 MiB $ar_big ms; $moved MB crossed the link (load $l)"
}

# plan_link NAME: the --link argument for this link's plans (and the rule's runs).
plan_link() {
  local name=$1 choice=$plan_link_choice
  if [ "$choice" = auto ] && [ $has_measure_link = 1 ]; then
    local file="$work/link-$name.json" larger=()
    [ $has_measure_link_max = 1 ] && [ "$link_max" -gt 33554432 ] &&
      larger=(--measure-link-max "$link_max")
    mpi "$work/measure-link-$name.log" "$tools/nn-train" --measure-link "$file" "${larger[@]}" \
      >/dev/null ||
      die "nn-train --measure-link over $name failed: $(tail -5 "$work/measure-link-$name.log")"
    echo "$file"
    return
  fi
  if [ "$choice" = auto ] || [ "$choice" = preset ]; then
    # The preset nearest to the ping-pong's figures (log distance; docs/scaling.md's table).
    python3 - "$mpi_latency_us" "$mpi_MBps" <<'PY'
import math, sys
lat, mbps = float(sys.argv[1]), float(sys.argv[2])
presets = {"nvlink-h100": (3, 460e3), "ib-ndr": (5, 45e3), "pcie-h100": (5, 40e3),
           "eth-10g": (50, 1150), "eth-1g": (100, 117)}
d = lambda p: math.log(max(lat, 0.1) / p[0]) ** 2 + math.log(max(mbps, 1) / p[1]) ** 2
print(min(presets, key=lambda k: d(presets[k])))
PY
    return
  fi
  echo "$choice"
}
describe_link() {
  if [ -f "$1" ]; then
    python3 -c 'import json, sys; j = json.load(open(sys.argv[1]))
print("measured: %.0f us, %.3f GB/s" % (j["latency_s"] * 1e6, j["bytes_per_s"] / 1e9))' "$1"
  else
    echo "preset $1"
  fi
}

# ---- networks -----------------------------------------------------------------------------------
# make_network NAME: data and command files in $work/NAME.
make_network() {
  local name=$1 dir=$work/$1 items=27278 hidden="128" b=$batch
  case $name in
    3x1024) hidden="1024 1024 1024" ;;
    million) items=1000000 b=$batch_million ;;
  esac
  mkdir -p "$dir"
  (
    cd "$dir"
    USERS=${examples[$name]} PER=144 ITEMS=$items bash "$root/scripts/ml20m_shaped_ratings.sh" \
      ratings.csv 2>/dev/null
    # The feature index holds every item in order, so the layers are exactly ITEMS wide.
    python3 -c "import sys; n = int(sys.argv[1]); print('catalog\t' + ':'.join(map(str, range(n))))" \
      $items >catalog.txt
    "$tools/nn-generate" -q -d input -i catalog.txt -o catalog.nc -f items.idx -s catalog.idx -c --align 1
    rm -f catalog.nc
    for set in input output; do
      "$tools/nn-generate" -q -d $set --rows --header -i ratings.csv -o $set.nc -f items.idx \
        -s users.idx -m --align 1
    done
    rm -f ratings.csv catalog.txt
    python3 - "$hidden" <<'PY'
import json, sys
layers = [{"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": True}]
for i, n in enumerate(sys.argv[1].split()):
    layers.append({"Name": f"Hidden{i}", "Kind": "Hidden", "N": int(n), "Activation": "Sigmoid"})
layers.append({"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
               "Activation": "Sigmoid"})
json.dump({"Name": "autoencoder", "ErrorFunction": "CrossEntropy", "Layers": layers},
          open("network.json", "w"), indent=1)
PY
    for mode in data model rule; do
      local key=""
      [ $mode = data ] && key='"Parallel": "Data", '
      [ $mode = model ] && key='"Parallel": "Model", '
      cat >$mode.cdl <<JSON
{ "Network": "network.json", "Command": "Train", "RandomSeed": 1, $key"Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": $epochs, "MiniBatch": $b, "Optimizer": "RMSProp", "Alpha": 0.001,
    "mu": 0.9, "Lambda": 0, "CheckpointInterval": 0, "Results": "net.nc" } }
JSON
    done
  )
}

# modes LOG: the modes nn-train's log (a plan or a run) gives the layers: "data" or "model" when
# every layer has it, else "Layer=mode,..."; "-" when the log names none.
modes() {
  python3 - "$1" <<'PY'
import re, sys
modes = re.findall(r"^  layer '([^']+)': (data|model) parallel", open(sys.argv[1]).read(), re.M)
kinds = {k for _, k in modes}
print(kinds.pop() if len(kinds) == 1 else ",".join(f"{n}={k}" for n, k in modes) or "-")
PY
}

# plan NET MODE LINKARG OUT: runs the plan, prints "epoch_2ranks epoch_1rank modes".
plan() {
  local net=$1 mode=$2 link=$3 out=$4
  local extra=()
  [ $has_plan_steps = 1 ] && extra=(--plan-steps "$plan_steps")
  (cd "$work/$net" && "${prio[@]}" taskset -c "$cpus0" "$tools/nn-train" $mode.cdl --plan 2 --link "$link" \
     --threads "$threads" "${extra[@]}" >"$out" 2>&1) ||
    { note "the plan of $net/$mode failed: $(tail -3 "$out")"; echo "- - -"; return 1; }
  local epoch
  epoch=$(sed -n 's/^predicted epoch: \([0-9.]*\) s on 2 ranks (1 rank: \([0-9.]*\) s)$/\1 \2/p' "$out")
  echo "${epoch:-- -} $(modes "$out")"
}

# epoch_seconds JSONL: mean seconds of the epochs after the first (the first alone if only one).
epoch_seconds() {
  python3 - "$1" <<'PY'
import json, sys
s = [json.loads(l)["seconds"] for l in open(sys.argv[1]) if l.strip()]
s = s[1:] or s
print(f"{sum(s) / len(s):.3f}")
PY
}

# train NET CDL LOG [ARGS...]: two ranks over the current link (or one process with NP=1);
# prints the measured epoch seconds and the layers' modes as the run's log gives them.
train() {
  local net=$1 cdl=$2 log=$3
  shift 3
  local dir=$work/$net
  rm -f "$dir/net.epochs.jsonl"
  if [ "${NP:-2}" = 1 ]; then
    (cd "$dir" && timeout "$run_timeout" "${prio[@]}" taskset -c "$cpus0" "$tools/nn-train" "$cdl" "$@" \
       >"${log%.log}.out" 2>"$log") ||
      { note "$net: one process failed: $(tail -3 "$log")"; echo "- -"; return 1; }
  else
    (cd "$dir" && mpi "$log" "$tools/nn-train" "$dir/$cdl" "$@" >"${log%.log}.out") ||
      { note "$net: two ranks failed: $(tail -3 "$log")"; echo "- -"; return 1; }
  fi
  rm -f "$dir/net.nc"
  [ -s "$dir/net.epochs.jsonl" ] || { note "$net: no epoch log after $log"; echo "- -"; return 1; }
  cp "$dir/net.epochs.jsonl" "${log%.log}.epochs.jsonl"
  echo "$(epoch_seconds "$dir/net.epochs.jsonl") $(modes "$log")"
}

# ---- the run ------------------------------------------------------------------------------------
note "tools $tools; ranks on CPUs $cpus0 and $cpus1 ($threads thread(s) each); load $(load)"
if [ $dry = 0 ]; then
  [ $has_measure_link = 1 ] && note "this nn-train has --measure-link: plans use the measured links" ||
    note "this nn-train has no --measure-link: plans use the nearest --link preset"
  for net in $networks; do
    note "generating $net (${examples[$net]} examples)"
    make_network "$net"
  done
fi
: >"$work/verify.tsv"
: >"$work/rows.tsv"
declare -A one_rank_plan
for name in $links; do
  setup_link "$name"
  verify_link "$name"
  if [ $dry = 1 ]; then
    teardown_link
    continue
  fi
  link=$(plan_link "$name")
  linkdesc=$(describe_link "$link")
  note "$name: --link $link ($linkdesc)"
  extra=()
  [ $has_measure_link = 1 ] && extra=(--link "$link")  # the rule picks by this link
  for net in $networks; do
    declare -A pred=() meas=() picks=() ran=()
    for mode in data model rule; do
      l=$(load)
      read -r p1 p2 picked < <(plan "$net" $mode "$link" "$work/plan-$net-$name-$mode.txt" || true)
      pred[$mode]=$p1 picks[$mode]=$picked
      [[ -z ${one_rank_plan[$net]:-} && $p2 != - ]] && one_rank_plan[$net]=$p2
      if [ $mode = rule ] && [ "$picked" = "${picks[data]}" ]; then
        meas[rule]=${meas[data]} ran[rule]=${ran[data]}
      elif [ $mode = rule ] && [ "$picked" = "${picks[model]}" ]; then
        meas[rule]=${meas[model]} ran[rule]=${ran[model]}
      else
        note "$net over $name, $mode: training ($epochs epochs, load $l)"
        args=()
        [ $mode = rule ] && args=("${extra[@]}")
        read -r secs run_modes < <(train "$net" $mode.cdl "$work/train-$net-$name-$mode.log" \
          "${args[@]}" || true)
        meas[$mode]=$secs ran[$mode]=$run_modes
      fi
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$net" "$name" "$linkdesc" "$mode" "$picked" \
        "${ran[$mode]}" "${pred[$mode]}" "${meas[$mode]}" "$l" >>"$work/rows.tsv"
      note "$net over $name, $mode ($picked): predicted ${pred[$mode]} s, measured ${meas[$mode]} s"
    done
  done
  teardown_link
done
if [ $dry = 0 ]; then
  for net in $networks; do
    l=$(load)
    note "$net: one process ($threads thread(s), load $l)"
    read -r secs _ < <(NP=1 train "$net" data.cdl "$work/train-$net-1rank.log" || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$net" "-" "-" "1 rank" "-" "-" \
      "${one_rank_plan[$net]:--}" "$secs" "$l" >>"$work/rows.tsv"
  done
fi

# ---- tables -------------------------------------------------------------------------------------
status=0
python3 - "$work/verify.tsv" "$work/rows.tsv" "$threads" "$epochs" "$failures" >"$work/tables.md" \
  <<'PY' || status=$?
import sys
verify, rows, threads, epochs, failures = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
print("| link | shaping | TCP round trip us | TCP MB/s | MPI latency us | MPI MB/s "
      "| all-reduce 4 KiB us | all-reduce 8 MiB ms | MB through the link | load |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for line in open(verify):
    print("| " + " | ".join(line.rstrip("\n").split("\t")) + " |")
table = [l.rstrip("\n").split("\t") for l in open(rows) if l.strip()]
bad = failures
if table:
    print()
    print(f"Epoch seconds: predicted by `nn-train --plan 2`, measured as the mean of epochs 2-{epochs} "
          f"of `mpirun -np 2 nn-train` ({threads} thread(s) per rank).")
    print()
    print("| network | link | --link of the plan | mode | layers | predicted s | measured s "
          "| error | within 25% | load |")
    print("| --- | --- | --- | --- | --- | ---: | ---: | ---: | --- | ---: |")
    for net, link, desc, mode, picks, ran, p, m, load in table:
        if ran not in ("-", picks):  # the run split other layers than the plan assumed
            picks = f"plan {picks}, **run {ran}**"
            bad += 1
        err, ok = "-", "-"
        counts = mode != "1 rank"  # one process: shown to tell compute from communication errors
        try:
            e = (float(p) - float(m)) / float(m)
            err, ok = f"{e * 100:+.0f}%", "yes" if abs(e) <= 0.25 else "**no**"
            bad += counts and ok != "yes"
        except ValueError:
            bad += counts
        print(f"| {net} | {link} | {desc} | {mode} | {picks} | {p} | {m} | {err} | {ok} | {load} |")
    print()
    print("| network | link | the rule picks | predicted faster | measured faster | rule's pick within 5% of the faster |")
    print("| --- | --- | --- | --- | --- | --- |")
    groups = {}
    for net, link, desc, mode, picks, ran, p, m, load in table:
        groups.setdefault((net, link), {})[mode] = (picks, p, m)
    for (net, link), g in groups.items():
        if not {"data", "model", "rule"} <= g.keys():
            continue
        try:
            pd, pm = float(g["data"][1]), float(g["model"][1])
            md, mm, mr = float(g["data"][2]), float(g["model"][2]), float(g["rule"][2])
        except ValueError:
            print(f"| {net} | {link} | {g['rule'][0]} | - | - | - |")
            bad += 1
            continue
        ok = mr <= 1.05 * min(md, mm)
        bad += not ok
        print(f"| {net} | {link} | {g['rule'][0]} | {'data' if pd < pm else 'model'} "
              f"| {'data' if md < mm else 'model'} | {'yes' if ok else '**no**'} |")
print()
print("verdict:", "every check passed" if bad == 0 else f"{bad} check(s) failed")
sys.exit(1 if bad else 0)
PY
cat "$work/tables.md"
exit $status
