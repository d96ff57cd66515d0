#!/usr/bin/env bash
# "Beyond one host" on one machine: two network namespaces joined by a veth pair (10.77.0.1 and
# 10.77.0.2) act as two hosts; Open MPI runs one rank in each and talks TCP between them (no
# shared memory: btl tcp,self), launching the second "host" through `ip netns exec` (the rsh
# agent below stands in for ssh). Trains the tiny recommendation data set across the two "hosts"
# (data or model parallel, whichever the per-layer rule of docs/scaling.md picks for this
# network; the check only asks that both ranks took part) and predicts with both, then compares
# with one process: the loss of every epoch and the top-10 lists must match.
# Needs root (ip netns), iproute2 and Open MPI. Usage: scripts/mpi-netns-check.sh [tool-dir]
# Exit status 0 = same result, 1 = different, 77 = the sandbox refuses network namespaces.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$(realpath "${1:-${NN_BUILD_DIR:-$root/build}/src/tools}")
tag=nn$$
ns_a=${tag}a ns_b=${tag}b
work=$(mktemp -d)
cleanup() {
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
if ! ip netns add "$ns_a" 2>"$work/err" || ! ip netns add "$ns_b" 2>>"$work/err"; then
  echo "mpi-netns-check: this sandbox refuses network namespaces: $(cat "$work/err")" >&2
  exit 77
fi
ip link add "v$tag" type veth peer name "w$tag"
ip link set "v$tag" netns "$ns_a"
ip link set "w$tag" netns "$ns_b"
ip -n "$ns_a" addr add 10.77.0.1/24 dev "v$tag"
ip -n "$ns_b" addr add 10.77.0.2/24 dev "w$tag"
for ns in "$ns_a" "$ns_b"; do
  ip -n "$ns" link set lo up
done
ip -n "$ns_a" link set "v$tag" up
ip -n "$ns_b" link set "w$tag" up
ip -n "$ns_a" link show "v$tag" | grep -q "state UP\|LOWER_UP" || { echo "veth link down" >&2; exit 1; }

cd "$work"
# The launcher's "ssh": run the command for host 10.77.0.2 inside the second namespace.
cat >agent.sh <<AGENT
#!/bin/sh
host=\$1
shift
case \$host in
  10.77.0.1) ns=$ns_a ;;
  *) ns=$ns_b ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
chmod +x agent.sh
printf '10.77.0.1 slots=1\n10.77.0.2 slots=1\n' >hosts

python3 - <<'PY'
import random
random.seed(5)
with open("ratings.txt", "w") as f:
    for u in range(40):
        t = u % 3
        items = [f"m{t*8+j}" for j in range(8) if random.random() < 0.7] or [f"m{t*8}"]
        f.write(f"u{u}\t" + ":".join(items) + "\n")
PY
"$tools/nn-generate" -d input -i ratings.txt -o input.nc -f features.idx -s samples.idx -c 2>/dev/null
"$tools/nn-generate" -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx 2>/dev/null
cat >config.json <<'JSON'
{ "Name": "tiny", "ErrorFunction": "CrossEntropy", "Denoising": { "p": 0.2 },
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Sigmoid", "pDropout": 0.1 },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid" } ] }
JSON
cat >train.cdl <<'JSON'
{ "Network": "config.json", "Command": "Train", "RandomSeed": 7, "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 6, "MiniBatch": 7, "Alpha": 0.01, "Optimizer": "Adam",
    "mu": 0.9, "Lambda": 0.001, "Results": "net.nc" } }
JSON
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun -np 2 --hostfile hosts --mca plm_rsh_agent "$work/agent.sh"
     --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24
     -x PATH -x NN_MPI_TIMEOUT=60)
predict=(-n net.nc -r ratings.txt -i features.idx -o features.idx -f ratings.txt -k 10)

"$tools/nn-train" train.cdl 2>one.log
"$tools/nn-predict" "${predict[@]}" >one.recs 2>/dev/null
mv net.nc one.nc
ip netns exec "$ns_a" timeout 120 "${mpi[@]}" "$tools/nn-train" train.cdl 2>two.log
ip netns exec "$ns_a" timeout 120 "${mpi[@]}" "$tools/nn-predict" "${predict[@]}" >two.recs \
  2>/dev/null
# Which host each rank ran on, as MPI saw it (each namespace has its own address).
ip netns exec "$ns_a" timeout 60 "${mpi[@]}" sh -c \
  'echo "rank $OMPI_COMM_WORLD_RANK on $(ip -4 -o addr show | grep -o "10\.77\.0\.[0-9]*")"' |
  sort >placement.txt
cat placement.txt
grep -q "rank 0 on 10.77.0.1" placement.txt && grep -q "rank 1 on 10.77.0.2" placement.txt ||
  { echo "mpi-netns-check: ranks did not run in the two namespaces" >&2; exit 1; }
# The plan line names the ranks; which kind of parallelism the rule picks is not the point here.
grep -E "(data|model) parallel: 2 ranks" two.log ||
  { echo "mpi-netns-check: the two-host run did not train on 2 ranks:" >&2; cat two.log >&2; exit 1; }
paste <(grep -oE '^epoch [0-9]+/[0-9]+: loss [0-9.]+' one.log) \
      <(grep -oE 'loss [0-9.]+' two.log | head -6) | sed 's/^/one process | two hosts: /'
python3 - <<'PY'
import re
a = [float(x) for x in re.findall(r"^epoch \d+/\d+: loss ([0-9.]+)", open("one.log").read(), re.M)]
b = [float(x) for x in re.findall(r"^epoch \d+/\d+: loss ([0-9.]+)", open("two.log").read(), re.M)]
assert a and len(a) == len(b), (a, b)
for x, y in zip(a, b):
    assert abs(x - y) <= 1e-5 * max(abs(x), 1e-3), (x, y)
PY
cmp one.recs two.recs || { echo "mpi-netns-check: top-10 lists differ" >&2; exit 1; }
echo "mpi-netns-check: two hosts over TCP give the single-process result (losses and $(wc -l <one.recs) top-10 lists)"
