#!/usr/bin/env bash
# Installs: `cmake --install` puts the six tools in <prefix>/bin and their man pages in
# <prefix>/share/man/man1 (so `man nn-train` works); every tool answers --version and -q.
# Usage: install_version.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir
build=$(realpath "$tools/../..")
version=$(sed -n 's/^project(nn .*VERSION \([0-9.]*\).*/\1/p' "$2/CMakeLists.txt")
[[ -n $version ]] || fail "no project version in CMakeLists.txt"

cmake --install "$build" --prefix "$work/prefix" >install.log || fail "cmake --install: $(cat install.log)"
for t in nn-generate nn-train nn-predict nn-encode nn-serve nn-export; do
  [[ -x prefix/bin/$t ]] || fail "$t not installed: $(cat install.log)"
  [[ -s prefix/share/man/man1/$t.1 ]] || fail "$t.1 not installed"
  [[ $(prefix/bin/$t --version) == "$t $version" ]] || fail "$t --version: $(prefix/bin/$t --version 2>&1)"
  # The help captured whole first: grep -q stops reading at its match, and under pipefail the
  # writer's SIGPIPE would fail the check once the help outgrows one write.
  help=$("$tools/$t" --help)
  grep -q -- '-q,--quiet' <<<"$help" || fail "$t has no -q"
  grep -q -- '--version' <<<"$help" || fail "$t --help does not list --version"
done
if command -v man >/dev/null; then
  [[ $(MANPATH="$work/prefix/share/man" man -w nn-train) == "$work/prefix/share/man/man1/nn-train.1"* ]] ||
    fail "man -w nn-train: $(MANPATH="$work/prefix/share/man" man -w nn-train 2>&1)"
fi
echo "install_version: all checks passed"
