"""Relay graph passes, one module each; ``ir/registry.py`` loads them lazily.

    infer_type.InferType                    --infer-type
    fuse_ops.FuseOps                        --fuse-ops='max-depth=256 opt-level=2'
    convert_layout.ConvertLayout            --convert-layout='nn.conv2d=NHWC'
    fold_constant.FoldConstant              --fold-constant
    dce.DeadCodeElimination                 --dce
    cse.CommonSubexprElimination            --cse
    canonicalize.Canonicalize               --canonicalize

The helpers below are shared by several passes; this module imports nothing
heavy so that loading one pass stays cheap.
"""

from __future__ import annotations

from ....ir.pass_manager import ModulePass
from ..ops.function import ConstantOp, FuncOp


def relay_functions(module, include_primitive: bool = True):
    """The relay.func ops at the top level of `module`, in order."""
    out = []
    for op in module.regions[0].blocks[0].ops:
        if isinstance(op, FuncOp) and (include_primitive or "primitive" not in op.attributes):
            out.append(op)
    return out


def effect_free_functions(module) -> dict:
    """{name: op} of the top-level symbols whose calls have no effect but
    their results: a function none of whose ops (nested ones included) is
    stateful (a reference op), a call of a function value (what it runs is
    not known here), or a call of a function that is not itself effect free.
    dce may erase an unused call of one, cse merge two equal calls."""
    from ..ops.closure import CallIndirectOp
    from ..ops.function import CallOp
    symbols = {op.attributes["sym_name"]: op for op in module.regions[0].blocks[0].ops
               if isinstance(op.attributes.get("sym_name"), str)}
    calls, effectful = {}, set()
    for name, f in symbols.items():
        calls[name] = set()
        for op in f.walk(include_self=False):
            if getattr(op, "STATEFUL", False) or isinstance(op, CallIndirectOp):
                effectful.add(name)
            elif isinstance(op, CallOp):
                calls[name].add(op.attributes["callee"].name)
    changed = True
    while changed:      # a caller of an effectful function has effects too
        changed = False
        for name, callees in calls.items():
            if name not in effectful and callees & effectful:
                effectful.add(name)
                changed = True
    return {n: f for n, f in symbols.items() if n not in effectful}


class GraphFunctionPass(ModulePass):
    """A graph pass: ``run_on`` each relay.func that is not a primitive
    (fused) function, once every type is inferred."""

    OP = "relay.func"

    def run(self, module, ctx):
        from .infer_type import ensure_types
        ensure_types(module)
        for func in relay_functions(module, include_primitive=False):
            self.run_on(func, ctx)


def is_primitive(func) -> bool:
    return "primitive" in func.attributes


def defining_constant(v):
    """The relay.constant op defining `v`, or None."""
    d = v.defining_op()
    return d if isinstance(d, ConstantOp) else None


def erase_if_dead(ops):
    """Erase each op of `ops` (pure, e.g. constants) whose results lost all
    uses; later entries first so a chain of dead ops goes in one sweep."""
    n = 0
    seen = set()
    for op in reversed(ops):
        if id(op) in seen or op.parent is None:
            continue
        seen.add(id(op))
        if all(not r.uses for r in op.results):
            op.erase()
            n += 1
    return n
