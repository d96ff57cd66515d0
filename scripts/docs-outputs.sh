#!/usr/bin/env bash
# Regenerates the outputs the docs quote from real runs: every command block of the given
# documents (default: README.md, docs/*.md, man/*.1) runs on the real data (NN_DOCS_FULL=1; the
# tutorial's 80 epochs on all of MovieLens take minutes), and each block marked
# `<!-- docs-test: output -->` is rewritten with what the command printed. Then read the diff and
# the prose around it: the text must say only what the run shows (`expect` markers name the
# lines it relies on and stop the rewrite when they are gone). tests/docs/README.md describes the
# markers; CTest's docs.* tests check the quoted forms on small data.
# Usage: scripts/docs-outputs.sh [DOC...]   (after scripts/setup.sh; NN_BUILD_DIR as there)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${NN_BUILD_DIR:-build}
[[ -x $build/src/tools/nn-train ]] || { echo "docs-outputs: build first (scripts/setup.sh)" >&2; exit 2; }
docs=("$@")
[[ ${#docs[@]} -gt 0 ]] || docs=(README.md docs/*.md man/*.1)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
status=0
for doc in "${docs[@]}"; do
  python3 tests/docs/run_docs.py "$doc" --source . --build "$build" --regenerate || status=1
done
git diff --stat -- "${docs[@]}"
exit $status
