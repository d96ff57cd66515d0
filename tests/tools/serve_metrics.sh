#!/usr/bin/env bash
# nn-serve's GET /metrics over HTTP (lib/serve_metrics_check.py): after a known mix of requests,
# refusals and reloads the counters say exactly that. serve_metrics_promtool.sh also lints the
# exposition with promtool.
# Usage: serve_metrics.sh <tool-dir> <source-dir>
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
timeout 300 /usr/bin/python3 "$here/lib/serve_metrics_check.py" "$tools"
echo "serve_metrics: OK"
