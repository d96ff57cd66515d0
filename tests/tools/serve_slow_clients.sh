#!/usr/bin/env bash
# Slow and idle clients cannot stall nn-serve (lib/serve_slow_clients_check.py): 1,000 idle or
# slowly-sending connections while valid requests are answered within 2 s each; 413 / 400 at once
# for a declared body over --max-body or a bad Content-Length; the header and idle timeouts; the
# --max-connections bound. Loopback only, bounded counts and times.
# Usage: serve_slow_clients.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
[[ -x "$tools/nn-serve" ]] || fail "nn-serve was not built"
enter_work_dir
tiny_ratings
tiny_datasets "$tools"
tiny_config 8
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n network.nc -e 1 -b 8 --seed 1
timeout 300 /usr/bin/python3 "$here/lib/serve_slow_clients_check.py" "$tools"
echo "serve_slow_clients: OK"
