"""Shared by the AutoTVM tests: a small matmul template and running a te
module through the whole lowering.

    from autotvm_check import MATMUL, lower_and_run
"""

from tvmd.backend.llvm import jit
from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
from tvmd.ir.registry import get_pass_class
from tvmd.runtime.executor import allocate_outputs

# 24x40 @ 40x20, three knobs: 4 x 3 x 3 = 36 configs, default index 1
MATMUL = """te.func @matmul(%A: tensor<24x40xf32>, %B: tensor<40x20xf32>) -> tensor<24x20xf32> {
  %C = te.compute [%i, %j] reduce [%k: 40] "sum" : tensor<24x20xf32> {
    %a = te.read %A[%i, %k] : f32
    %b = te.read %B[%k, %j] : f32
    %m = arith.mulf %a, %b : f32
    yield %m
  }
  %i, %j, %k = te.axes %C
  %io, %ii = te.split %i {factor = #tune.knob<"tile_i", [1, 4, 5, 24], 4>}
  %jo, %ji = te.split %j {factor = #tune.knob<"tile_j", [3, 8, 20]>}
  %ko, %ki = te.split %k {factor = #tune.knob<"tile_k", [1, 7, 8]>}
  te.reorder %io, %jo, %ko, %ii, %ki, %ji
  te.vectorize %ji
  te.parallel %io
  return %C
}
"""


def lower_and_run(m, *inputs):
    """Lower te module `m` in place (apply-schedule, lower-te-to-tir,
    lower-tir), JIT it and call its tir.func on `inputs`; its first output."""
    PassManager(instantiate(parse_pipeline("apply-schedule,lower-te-to-tir,lower-tir"), get_pass_class)).run(m)
    f = next(op for op in m.body.ops if op.name == "tir.func")
    outs = allocate_outputs(f)
    jit.compile(m)[f.sym_name](*inputs, *outs)
    return outs[0]
