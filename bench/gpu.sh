#!/bin/sh
# CUDA kernels on this machine's GPU: numerics against numpy, then timings
# (matmul, add+relu, conv2d, softmax, a fused model), one table, one run.
#
#   bench/gpu.sh [--repeat N] [--small] [--only matmul,softmax] [--arch sm_90]
#
# Needs an NVIDIA GPU, pycuda, and NVRTC or nvcc.  Exit status: 0 all kernels
# match numpy, 1 a mismatch, 2 no GPU / no pycuda (a message says which).
# Without a GPU, `bench/gpu_check.py --emulate` runs the same checks on the
# tir interpreter with tiny shapes.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
py="${PYTHON:-$here/../.venv/bin/python}"
[ -x "$py" ] || py="$(command -v python3)"
if ! "$py" -c 'import pycuda' 2>/dev/null; then
  echo "bench/gpu.sh: pycuda is not installed for $py (pip install 'tvmd[cuda]'); this benchmark needs an NVIDIA GPU" >&2
  exit 2
fi
exec "$py" "$here/gpu_check.py" "$@"
