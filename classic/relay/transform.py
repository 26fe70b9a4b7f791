"""``relay.transform``: TVM's graph passes by their TVM names, each the
tvmd pass (docs/passes.md) that does the same.

    InferType            infer-type             FoldConstant        fold-constant
    FuseOps(level)       fuse-ops{opt-level}    ConvertLayout(d)    convert-layout{op=DATA:KERNEL}
    DeadCodeElimination  dce                    EliminateCommonSubexpr  cse
    SimplifyInference    simplify-inference     FoldScaleAxis       fold-scale-axis
    AlterOpLayout        alter-op-layout        CanonicalizeOps     canonicalize{bias-add-to-add}
    SimplifyExpr         canonicalize           ToMixedPrecision(t) to-mixed-precision{dtype=t}
"""

from __future__ import annotations

from ..transform import Pass, Sequential  # noqa: F401  (TVM has Sequential here too)


def InferType():   # noqa: N802 -- TVM's names
    return Pass("InferType", "infer-type")


def FoldConstant(fold_qnn=False):   # noqa: N802
    return Pass("FoldConstant", "fold-constant" + ("{fold-qnn=true}" if fold_qnn else ""))


def FuseOps(fuse_opt_level=-1):   # noqa: N802
    """-1: the current PassContext's opt_level decides, as in TVM."""
    from ..transform import PassContext
    level = fuse_opt_level if fuse_opt_level >= 0 else min(PassContext.current().opt_level, 2)
    return Pass("FuseOps", f"fuse-ops{{opt-level={level}}}")


def ConvertLayout(desired_layouts):   # noqa: N802
    """``{"nn.conv2d": ["NHWC", "default"]}``: data layout, kernel layout."""
    entries = []
    for op, layouts in desired_layouts.items():
        layouts = [layouts] if isinstance(layouts, str) else list(layouts)
        data = layouts[0]
        kernel = layouts[1] if len(layouts) > 1 else "default"
        entries.append(f"{op}={data}:{kernel}" if kernel != "default" else f"{op}={data}")
    return Pass("ConvertLayout", "convert-layout{" + " ".join(entries) + "}")


def DeadCodeElimination(inline_once=False, ignore_impurity=False):   # noqa: N802
    return Pass("DeadCodeElimination", "dce")


def EliminateCommonSubexpr(fskip=None):   # noqa: N802
    return Pass("EliminateCommonSubexpr", "cse")


def SimplifyInference():   # noqa: N802
    return Pass("SimplifyInference", "simplify-inference")


def FoldScaleAxis():   # noqa: N802
    return Pass("FoldScaleAxis", "fold-scale-axis")


def AlterOpLayout():   # noqa: N802
    return Pass("AlterOpLayout", "alter-op-layout")


def CanonicalizeOps():   # noqa: N802
    return Pass("CanonicalizeOps", "canonicalize{bias-add-to-add=true}")


def SimplifyExpr():   # noqa: N802
    return Pass("SimplifyExpr", "canonicalize")


def ToMixedPrecision(mixed_precision_type="float16", missing_op_mode=1):   # noqa: N802
    return Pass("ToMixedPrecision", f"to-mixed-precision{{dtype={mixed_precision_type}}}")
