# Sourced by the benchmark scripts: exports OPENBLAS_CORETYPE for the kernels of this CPU's
# instruction set unless it is set already, so that the benchmark programs (which, unlike the
# nn-* tools, do not restart themselves with it) and their PyTorch peers, which share Debian's
# OpenBLAS, run the same kernels. OpenBLAS picks its kernels by the CPU's model number and falls
# back to SSE3 ones on a CPU newer than itself (docs/performance.md, "OpenBLAS kernels").
if [ -z "${OPENBLAS_CORETYPE:-}" ] && [ -r /proc/cpuinfo ]; then
  _nn_flags=" $(grep -m1 '^flags' /proc/cpuinfo) "
  _nn_has() { for f in "$@"; do [[ $_nn_flags == *" $f "* ]] || return 1; done; }
  if _nn_has avx512f avx512dq avx512bw avx512vl; then export OPENBLAS_CORETYPE=SkylakeX
  elif _nn_has avx2 fma; then export OPENBLAS_CORETYPE=Haswell
  elif _nn_has avx; then export OPENBLAS_CORETYPE=Sandybridge
  fi
  unset -f _nn_has
  unset _nn_flags
fi
