#!/usr/bin/env bash
# `pip install .` standing alone: a fresh virtual environment WITHOUT Debian's site packages gets
# the module and its dependencies (NumPy, SciPy, pandas) from the package index alone, then runs
# docs/python.md's "From a ratings table to serving" example on the bundled MovieLens ratings.
# Prints the install and example times. CI runs it after the tests (.ci/run).
# Usage: scripts/pip_check.sh [work-dir]   (default: a new temporary folder, removed afterwards)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
[ -n "${1:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
python3 -c 'import ensurepip' 2>/dev/null || {
  echo "pip_check: python3-venv is missing (scripts/setup.sh installs it)" >&2
  exit 1
}
python3 -m venv "$work/venv"
start=$(date +%s)
echo "pip_check: pip install '.[pandas]' into a venv without system site packages"
(cd "$work" && "$work/venv/bin/pip" install -q "$root[pandas]")
installed=$(date +%s)
echo "pip_check: installed in $((installed - start)) s"
# The example as the page shows it, run where samples/movielens/ratings.csv resolves.
mkdir -p "$work/run"
ln -sfn "$root/samples" "$work/run/samples"
python3 - "$root/docs/python.md" >"$work/run/example.py" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
section = text.split("## From a ratings table to serving", 1)[1]
print(re.search(r"```python\n(.*?)```", section, re.S).group(1))
PY
(cd "$work/run" && env -u PYTHONPATH "$work/venv/bin/python" -W error::RuntimeWarning example.py)
test -s "$work/run/movielens-model/network.nc" || { echo "pip_check: no saved network" >&2; exit 1; }
done_at=$(date +%s)
echo "pip_check: example ran in $((done_at - installed)) s; install + example $((done_at - start)) s" \
  "(load average $(cut -d' ' -f1-3 /proc/loadavg))"
