"""``relay.build`` and the graph executor.

    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("data", x); m.run(); y = m.get_output(0).numpy()

relay.build binds `params` into ``@main`` (each named parameter becomes a
constant, as TVM's bind_params_by_name) and compiles with
``tvmd.runtime.build`` at the context's opt_level (its disabled passes by
TVM's names are tvmd's by the transform table).
"""

from __future__ import annotations

import numpy as np

from ..expr import TVMError


def bind_params(func, params):
    """Replace each parameter of relay.func `func` named in `params` by a constant."""
    from ...dialects.relay.ops.function import ConstantOp
    from ...ir import types as T
    from ...ir.attributes import DenseAttr
    block = func.regions[0].blocks[0]
    names = {a.name: a for a in block.args}
    unknown = [k for k in params if k not in names]
    if unknown:
        raise TVMError(f"params name(s) not among @main's parameters: {', '.join(unknown)} "
                       f"(it has: {', '.join(n for n in names if n)})")
    for k, v in params.items():
        arr = np.ascontiguousarray(v.numpy() if hasattr(v, "numpy") else v)
        arg = names[k]
        want = arg.type
        if tuple(arr.shape) != tuple(want.shape) or T.from_numpy_dtype(arr.dtype) is not want.element_type:
            raise TVMError(f"param '{k}' is {arr.dtype}{list(arr.shape)} but @main's parameter is {want}")
        c = ConstantOp.get(DenseAttr(arr, want, key=k))
        if block.first is not None:
            block.insert_before(block.first, c)
        else:
            block.append(c)
        c.results[0].name = k
        arg.replace_all_uses_with(c.results[0])
    keep = [a for a in block.args if a.name not in params]
    block.args = keep
    for i, a in enumerate(keep):
        a.index = i
    ft = func.attributes["function_type"]
    func.attributes["function_type"] = T.FunctionType([a.type for a in keep], list(ft.results))


def build(ir_mod, target=None, target_host=None, executor=None, runtime=None, params=None, mod_name="default"):
    """Compile `ir_mod` (an IRModule, or a relay.Function) for `target`."""
    from ...runtime.build import build as tvmd_build
    from ..build import IRModule
    from ..target import Target, as_target
    from ..transform import PassContext
    from .expr import Function
    if isinstance(ir_mod, Function):
        ir_mod = IRModule.from_expr(ir_mod)
    if not isinstance(ir_mod, IRModule):
        raise TVMError(f"relay.build takes an IRModule, got {type(ir_mod).__name__}")
    tgt = as_target(target if target is not None else Target.current() or "llvm")
    m = ir_mod.module.clone()
    if params:
        bind_params(IRModule(m)["main"], params)
    ctx = PassContext.current()
    try:
        cm = tvmd_build(m, target=str(tgt.spec), opt_level=ctx.opt_level,
                        disabled_passes=[TVM_PASS_NAMES.get(p, p) for p in ctx.disabled_pass
                                         if TVM_PASS_NAMES.get(p, p) in _known_passes()])
    except Exception as e:
        from ...ir.diagnostics import DiagnosticError
        if isinstance(e, DiagnosticError):
            from ..build import _render
            raise TVMError(_render(e)) from None
        raise
    return GraphExecutorFactoryModule(cm, mod_name, params or {})


TVM_PASS_NAMES = {"FoldConstant": "fold-constant", "FuseOps": "fuse-ops", "ConvertLayout": "convert-layout",
                  "AlterOpLayout": "alter-op-layout", "SimplifyInference": "simplify-inference",
                  "FoldScaleAxis": "fold-scale-axis", "EliminateCommonSubexpr": "cse",
                  "DeadCodeElimination": "dce", "CanonicalizeOps": "canonicalize"}


def _known_passes():
    from ...ir.registry import PASSES
    return set(PASSES)


class GraphExecutorFactoryModule:
    """What relay.build returns: ``lib["default"](dev)`` makes an executor."""

    def __init__(self, compiled, name, params):
        self.compiled, self.libmod_name, self.params = compiled, name, params

    def __getitem__(self, name):
        if name != self.libmod_name:
            raise KeyError(f"no module '{name}' (have: {self.libmod_name})")
        return lambda *devices: _ExecutorHandle(self.compiled)

    def get_params(self):
        return dict(self.params)

    def export_library(self, path, cc=None):
        """A shared object with the model's native entry and ``path``.h beside it."""
        from ...runtime.export import export_library
        return export_library(self.compiled, path, cc=cc)


class _ExecutorHandle:
    def __init__(self, compiled):
        self.compiled = compiled


def create_executor(kind="graph", mod=None, device=None, target="llvm", params=None):
    """``relay.create_executor("graph", mod=mod, target="llvm").evaluate()(x)``."""
    if mod is None:
        raise TVMError("create_executor needs mod=")

    class _Executor:
        def evaluate(self, expr=None):
            lib = build(mod, target=target, params=params)
            cm = lib.compiled

            def run(*args, **kwargs):
                from ..nd import array
                names = cm.input_names
                ins = list(args) + [kwargs[n] for n in names[len(args):] if n in kwargs]
                out = cm.run(*[np.asarray(a.numpy() if hasattr(a, "numpy") else a) for a in ins])
                if isinstance(out, (list, tuple)):
                    return [array(o) for o in out]
                return array(out)
            return run
    return _Executor()
