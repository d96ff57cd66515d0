#!/usr/bin/env bash
# nn-serve's GET /metrics checked by Prometheus's own linter, `promtool check metrics` (Debian
# package prometheus; .ci/run installs it), after the same checks as serve_metrics.sh. Skipped
# (exit 77) where promtool is not installed.
# Usage: serve_metrics_promtool.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
[[ -x "$tools/nn-serve" ]] || fail "nn-serve was not built"
if ! command -v promtool >/dev/null; then
  echo "serve_metrics_promtool: SKIP: promtool is not installed (Debian package prometheus)"
  exit 77
fi
enter_work_dir
tiny_ratings
tiny_datasets "$tools"
tiny_config 8
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n network.nc -e 1 -b 8 --seed 1
timeout 300 /usr/bin/python3 "$here/lib/serve_metrics_check.py" "$tools" --promtool
echo "serve_metrics_promtool: OK"
