#!/usr/bin/env bash
# scripts/fresh-machine-check.sh's guards (its --self-test-cleanup): host trees bound read-only,
# removal of a root refused while anything is mounted under it (a writable bind included), every
# mount undone on a failing path, then removal. Needs root and mount namespaces; skips otherwise.
# Usage: fresh_machine_cleanup.sh <tool-dir> <source-dir>
set -euo pipefail
if [[ $(id -u) != 0 ]] || ! unshare --mount --propagation private true 2>/dev/null; then
  echo "SKIP: needs root and mount namespaces (unshare --mount)"
  exit 77  # CTest: Skipped (SKIP_RETURN_CODE)
fi
bash "$2/scripts/fresh-machine-check.sh" --self-test-cleanup
