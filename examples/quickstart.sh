#!/bin/sh
# The lowering pipeline on the bundled CNN, one text file per step, then a
# JIT run compared against the numpy reference interpreter.
#
#   sh examples/quickstart.sh [model.relay] [out-dir]
#
# Every file in out/ is IR text you can read, edit and feed to the next step.
set -e
model=${1:-$(dirname "$0")/cnn.relay}
out=${2:-out}
mkdir -p "$out"

echo "== 1. graph passes: layout to NHWC, fold the weight transforms, fuse into kernels"
tvm-opt "$model" --convert-layout='nn.conv2d=NHWC' --fold-constant --fuse-ops -o "$out/1-fused.relay"
echo "== 2. each fused kernel becomes tensor expressions with a default schedule"
tvm-opt "$out/1-fused.relay" --lower-relay-to-te -o "$out/2-te.mlir"
echo "== 3. the schedules become loop nests"
tvm-opt "$out/2-te.mlir" --apply-schedule -o "$out/3-loops.mlir"
echo "== 4. loop nests over buffers (TIR), through the TIR pipeline (simplify, partition, vectorize, unroll, ...)"
tvm-opt "$out/3-loops.mlir" --lower-te-to-tir --lower-tir -o "$out/4-tir.mlir"
echo "== 5. LLVM IR"
tvm-translate "$out/4-tir.mlir" --emit=llvm -o "$out/5-model.ll"
ls -l "$out"
echo "== 6. compile with the LLVM JIT, run on random input, compare with numpy"
tvm-run "$out/4-tir.mlir" --random-inputs --reference "$model"
echo "== 7. or all of it in one command, with each kernel's time"
tvm-run "$model" --random-inputs --profile
