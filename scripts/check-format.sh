#!/usr/bin/env bash
# Fails (exit 1) when a tracked C++/CUDA source differs from what .clang-format makes of it, and
# names every such file. CI runs it (.ci/run); `scripts/check-format.sh --fix` rewrites the files.
# Needs Debian's clang-format (version 14 on bookworm; other versions may format differently).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null ||
  { echo "check-format: clang-format is not installed (apt-get install clang-format)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = --fix ]; then
  clang-format -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi
drift=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || drift+=("$f")
done
if [ ${#drift[@]} -gt 0 ]; then
  printf '%s\n' "${drift[@]}"
  echo "check-format: ${#drift[@]} of ${#files[@]} files differ from .clang-format" \
       "(scripts/check-format.sh --fix rewrites them)" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files follow .clang-format"
