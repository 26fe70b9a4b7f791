"""lower-tir: the standard tir pass sequence for a target.

``lower-tir{target=llvm}`` runs, in order::

    tir-serialize-small-parallel
    tir-inject-double-buffer  tir-simplify  tir-loop-partition  tir-simplify
    tir-vectorize  tir-unroll  tir-storage-rewrite  tir-lower-intrin{target=...}
    tir-remove-no-op  tir-simplify

and ``target=cuda`` drops the first and then adds ``tir-split-host-device`` and
``tir-thread-sync`` (when those passes are registered and importable);
for cuda, tir-vectorize takes loops of at most CUDA_MAX_LANES (4) lanes,
which the CUDA codegen moves as one ``float4`` where aligned (a schedule's
cooperative loads into shared memory), and leaves longer ones loops.  Why this order: partition first, so the main parts of split loops
have no guard left and vectorize sees straight-line bodies; unroll after
vectorize, so an unrolled loop around a vector body copies vector code;
storage-rewrite once loops stop moving; lower-intrin late, so vectorize has
turned the intrinsics it lowers into vector ones (erf gets the polynomial
only on vectors); a final remove-no-op and simplify clean up the constants
and dead index code the others leave.  Options: ``target``,
``unroll-max-step`` (tir-unroll's max-step) and ``max-lanes``
(tir-vectorize's).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import ModulePass, option

LLVM_SEQUENCE = ["tir-serialize-small-parallel", "tir-inject-double-buffer", "tir-simplify", "tir-loop-partition", "tir-simplify",
                 "tir-vectorize", "tir-unroll", "tir-storage-rewrite", "tir-lower-intrin",
                 "tir-remove-no-op", "tir-simplify"]
CUDA_EXTRA = ["tir-split-host-device", "tir-thread-sync"]
CUDA_MAX_LANES = 4   # float4 / int4: the widest load or store of one CUDA thread


def sequence(target: str) -> list[str]:
    names = list(LLVM_SEQUENCE)
    if target == "cuda":
        names.remove("tir-serialize-small-parallel")
        names += CUDA_EXTRA
    return names


@dataclass
class LowerTIR(ModulePass):
    """The standard tir pipeline for a target (simplify, partition, vectorize, unroll, ...).

    A whole-module pass: for cuda it splits host and device functions."""

    NAME = "lower-tir"
    OP = "builtin.module"
    target: str = option("llvm", "the target whose sequence to run: llvm or cuda")
    unroll_max_step: int = option(64, "tir-unroll's max-step")
    max_lanes: int = option(64, "tir-vectorize's max-lanes")

    def validate(self):
        if self.target not in ("llvm", "cuda"):
            raise ValueError(f"target must be llvm or cuda, got '{self.target}'")

    def passes(self):
        from ....ir.registry import PASSES, get_pass_class
        out = []
        for name in sequence(self.target):
            if name not in PASSES:
                continue
            try:
                cls = get_pass_class(name)
            except RuntimeError:
                if name in CUDA_EXTRA:
                    continue   # another part of the project, not there yet
                raise
            if name == "tir-unroll":
                p = cls(max_step=self.unroll_max_step)
            elif name == "tir-vectorize":
                p = cls(max_lanes=min(self.max_lanes, CUDA_MAX_LANES) if self.target == "cuda" else self.max_lanes)
            elif name == "tir-lower-intrin":
                p = cls(target=self.target)
            else:
                p = cls()
            out.append(p)
        return out

    def run(self, module, ctx):
        for p in self.passes():
            p.run(module, ctx)
