"""--quantize: int8 quantization of @main, TVM's relay.quantize flow.

    tvm-opt model.relay --quantize='calibrate-mode=kl_divergence dataset=calib.npz'
    tvm-opt model.relay --quantize='calibrate-mode=global_scale realize-to=qnn'

    from tvmd.dialects.relay.passes.quantize import quantize
    quantize(module, dataset=[{"x": x0}, {"x": x1}], calibrate_mode="percentile")

Phases, each its own module:

1. prerequisite optimisation (TVM's prerequisite_optimize): simplify-inference,
   fold-constant, fold-scale-axis, fold-constant -- through the pass
   registry, a pass that is not available skipped with a warning;
2. annotate.py   simulated_quantize points on the ops that quantize;
3. calibrate.py  their scales: weights from their values, the rest from
   global_scale or from the float model run on the data set (kl_divergence,
   percentile);
4. realize.py    the points become qnn ops (qnn.quantize, qnn.conv2d,
   qnn.requantize, qnn.dequantize, ...), then fold-constant quantizes the
   weights once;
5. qnn_lower.py  (realize_to = integer, the default) the qnn ops become relay
   integer arithmetic (cast, multiply, right_shift, clip, nn.conv2d on int8
   with int32 out, ...), runnable by the interpreter and the compiler.

do_simulation = true stops after calibrate: the graph keeps its
simulated_quantize ops, with their scales, and runs in float (TVM's
simulation mode).  Options: config.py (TVM's qconfig names and defaults).
Only @main is quantized; the functions it calls are left alone.
Statistics: quantize-points, qnn-ops-lowered.
"""

from __future__ import annotations

from dataclasses import dataclass

from .....ir.diagnostics import DiagnosticError, warning
from .....ir.pass_manager import ModulePass
from .config import QConfig
from ...ops.function import FuncOp

PREREQUISITES = ("simplify-inference", "fold-constant", "fold-scale-axis", "fold-constant")


@dataclass
class Quantize(QConfig, ModulePass):
    """Quantize to int8: annotate, calibrate, realize (qnn, then integer ops).

    A whole-module pass: it quantizes @main, running its prerequisite passes
    first.  The options are TVM's qconfig (config.py)."""

    NAME = "quantize"
    OP = "builtin.module"

    def validate(self):
        QConfig.validate(self)

    def run(self, module, ctx):
        from ..infer_type import ensure_types
        from .annotate import annotate
        from .calibrate import calibrate
        from .dataset import load_dataset, samples_from_python
        ensure_types(module)
        main_function(module)           # no @main: say so before any work
        run_passes(module, ctx, PREREQUISITES)
        func = main_function(module)
        samples = getattr(self, "samples", None)
        if samples is not None:
            samples = samples_from_python(samples, func)
        elif self.dataset:
            samples = load_dataset(self.dataset, func)
        if self.calibrate_mode != "global_scale" and not samples:
            raise DiagnosticError(func.loc, f"calibrate-mode={self.calibrate_mode} needs calibration data "
                                            "(dataset=PATH)")
        points = annotate(self, func)
        ctx.stat(self, "quantize-points", len(points))
        calibrate(self, module, func, points, samples or [])
        if self.do_simulation:
            return
        from .realize import realize
        realize(self, func)
        # quantize the weights once: qnn.quantize of a constant folds
        run_passes(module, ctx, (("fold-constant", {"fold_qnn": True}),))
        if self.realize_to == "integer":
            from .qnn_lower import lower_qnn
            ctx.stat(self, "qnn-ops-lowered", lower_qnn(module))
            run_passes(module, ctx, ("fold-constant",))


def main_function(module):
    for op in module.body.ops:
        if isinstance(op, FuncOp) and op.attributes.get("sym_name") == "main":
            return op
    funcs = [op for op in module.body.ops if isinstance(op, FuncOp)]
    names = ", ".join("@" + f.attributes.get("sym_name") for f in funcs)
    # located at the first function, where @main would be (the module has no line)
    first = funcs[0] if funcs else next(iter(module.body.ops), module)
    raise DiagnosticError(first.loc,
                          "--quantize quantizes @main, and the module has no relay.func @main"
                          + (f" (its functions: {names})" if funcs else ""))


def run_passes(module, ctx, names):
    """Run registered passes by name (or (name, options) pairs; options the
    pass does not have are dropped); one that is not registered or cannot
    be loaded is skipped with a warning."""
    import dataclasses
    from .....ir.registry import get_pass_class
    for name in names:
        name, opts = name if isinstance(name, tuple) else (name, {})
        try:
            cls = get_pass_class(name)
        except RuntimeError:
            cls = None
        if cls is None:
            warning(module.loc, f"quantize: pass '{name}' is not available; skipping it")
            continue
        fields = {f.name for f in dataclasses.fields(cls)}
        cls(**{k: v for k, v in opts.items() if k in fields}).run(module, ctx)


def quantize(module, dataset=None, **options):
    """Quantize `module` in place (Python API); `dataset` is a path, a list of
    dicts parameter name -> array (TVM's form) or a list of argument tuples;
    `options` are QConfig fields.  Returns the module."""
    import os
    from .....ir.pass_manager import PassContext
    p = Quantize(**options)
    if isinstance(dataset, (str, os.PathLike)):
        p.dataset = os.fspath(dataset)
    elif dataset is not None:
        p.samples = list(dataset)      # in-memory samples, loaded by run()
    try:
        p.validate()
    except ValueError as e:
        raise DiagnosticError(module.loc, f"--quantize: {e}") from None
    p.run(module, PassContext())
    return module


__all__ = ["Quantize", "QConfig", "quantize"]
