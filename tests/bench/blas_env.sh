# Sourced by every benchmark script before it runs anything: OpenBLAS chooses its kernels for the CPU it finds
# unless OPENBLAS_CORETYPE names others, and both ShareLens (attention's panels, the sgemm peak bench_train
# measures) and the peers (numpy, Debian's PyTorch) call OpenBLAS. An inherited OPENBLAS_CORETYPE=Haswell on
# an AVX-512 machine halves the peer's GEMMs (81 against 162 GFLOP/s for 2048x128 @ 128x512 on one core of
# this project's EPYC, 2026-11-29), so a comparison made under it measures the setting, not the trainers.
# The variables that pin OpenBLAS are unset here, with a note; BENCH_KEEP_OPENBLAS_ENV=1 keeps them. The
# kernel OpenBLAS then uses is printed, so a table can say what it was measured with.
if [ "${BENCH_KEEP_OPENBLAS_ENV:-0}" != 1 ]; then
  for _var in OPENBLAS_CORETYPE OPENBLAS_L2_SIZE; do
    if [ -n "${!_var:-}" ]; then
      echo "note: unsetting $_var=${!_var} so that OpenBLAS picks its kernels for this CPU, for ShareLens and" \
        "the peer alike (BENCH_KEEP_OPENBLAS_ENV=1 keeps it)" >&2
      unset "$_var"
    fi
  done
  unset _var
fi
_core=$(OPENBLAS_VERBOSE=2 /usr/bin/python3 -c 'import numpy' 2>&1 | sed -n 's/^Core: //p' | head -1 || true)
echo "OpenBLAS kernels: ${_core:-unknown (numpy, through which they are read, did not say)}" >&2
unset _core
