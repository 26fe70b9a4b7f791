"""Registries of dialects, ops and passes, all imported lazily.

Nothing here imports a dialect or a pass until it is asked for, so the
drivers start fast: ``tvm-opt --help`` lists the pass names from the table
below without importing any of them (``--list-passes`` imports the classes,
where each pass's summary, anchor op and options live).
"""

from __future__ import annotations

import importlib

from .core import OP_CLASSES

# dialect name -> package that defines its ops and its syntax (`syntax.py`)
DIALECTS = {
    "builtin": "tvmd.dialects.builtin",
    "arith": "tvmd.dialects.arith",
    "relay": "tvmd.dialects.relay",
    "te": "tvmd.dialects.te",
    "tir": "tvmd.dialects.tir",
}

_loaded: set[str] = set()


def load_dialect(name: str):
    mod = DIALECTS.get(name)
    if mod is None:
        return None
    m = importlib.import_module(mod)
    _loaded.add(name)
    return m


def load_all_dialects():
    for name in DIALECTS:
        if name not in _loaded:
            load_dialect(name)


def get_op_class(name: str):
    cls = OP_CLASSES.get(name)
    if cls is None:
        dialect = name.split(".", 1)[0]
        if dialect not in _loaded and dialect in DIALECTS:
            load_dialect(dialect)
            cls = OP_CLASSES.get(name)
    return cls


# -- passes -------------------------------------------------------------------
# name -> (module, class name).  Everything else about a pass -- its summary
# (the first line of its docstring), the op it runs on (OP) and its options
# with their help -- lives on its class; `--help` lists only these names,
# grouped by dialect, and `--list-passes` imports the classes.

PASSES: dict[str, tuple[str, str]] = {
    # relay
    "infer-type": ("tvmd.dialects.relay.passes.infer_type", "InferType"),
    "fuse-ops": ("tvmd.dialects.relay.passes.fuse_ops", "FuseOps"),
    "convert-layout": ("tvmd.dialects.relay.passes.convert_layout", "ConvertLayout"),
    "alter-op-layout": ("tvmd.dialects.relay.passes.alter_op_layout", "AlterOpLayout"),
    "fold-constant": ("tvmd.dialects.relay.passes.fold_constant", "FoldConstant"),
    "dce": ("tvmd.dialects.relay.passes.dce", "DeadCodeElimination"),
    "cse": ("tvmd.dialects.relay.passes.cse", "CommonSubexprElimination"),
    "canonicalize": ("tvmd.dialects.relay.passes.canonicalize", "Canonicalize"),
    "simplify-inference": ("tvmd.dialects.relay.passes.simplify_inference", "SimplifyInference"),
    "fold-scale-axis": ("tvmd.dialects.relay.passes.fold_scale_axis", "FoldScaleAxis"),
    "fuse-attention": ("tvmd.dialects.relay.passes.fuse_attention", "FuseAttention"),
    "to-mixed-precision": ("tvmd.dialects.relay.passes.to_mixed_precision", "ToMixedPrecision"),
    "accumulate-in-float32": ("tvmd.dialects.relay.passes.accumulate_in_float32", "AccumulateInFloat32"),
    "quantize": ("tvmd.dialects.relay.passes.quantize", "Quantize"),
    "quantize-weights": ("tvmd.dialects.relay.passes.quantize_weights", "QuantizeWeights"),
    "fake-quantization-to-integer": ("tvmd.dialects.relay.passes.fake_quantization_to_integer",
                                     "FakeQuantizationToInteger"),
    "qnn-legalize": ("tvmd.dialects.relay.passes.qnn_legalize", "QnnLegalize"),
    "qnn-canonicalize": ("tvmd.dialects.relay.passes.quantize.qnn_lower", "QnnCanonicalize"),
    "view-op-graph": ("tvmd.dialects.relay.passes.view_op_graph", "ViewOpGraph"),
    # conversions
    "lower-relay-to-te": ("tvmd.conversion.relay_to_te.pass_", "LowerRelayToTE"),
    "apply-schedule": ("tvmd.conversion.te_to_tir.apply_schedule", "ApplySchedule"),
    "apply-history-best": ("tvmd.autotvm.history_best_pass", "ApplyHistoryBest"),
    "lower-te-to-tir": ("tvmd.conversion.te_to_tir.lower", "LowerTEToTIR"),
    # tir
    "tir-simplify": ("tvmd.dialects.tir.passes.simplify", "Simplify"),
    "tir-flatten-buffer": ("tvmd.dialects.tir.passes.flatten_buffer", "FlattenBuffer"),
    "tir-loop-partition": ("tvmd.dialects.tir.passes.loop_partition", "LoopPartition"),
    "tir-vectorize": ("tvmd.dialects.tir.passes.vectorize", "Vectorize"),
    "tir-unroll": ("tvmd.dialects.tir.passes.unroll", "Unroll"),
    "tir-remove-no-op": ("tvmd.dialects.tir.passes.remove_no_op", "RemoveNoOp"),
    "tir-serialize-small-parallel": ("tvmd.dialects.tir.passes.serialize_small_parallel", "SerializeSmallParallel"),
    "tir-storage-rewrite": ("tvmd.dialects.tir.passes.storage_rewrite", "StorageRewrite"),
    "tir-lower-intrin": ("tvmd.dialects.tir.passes.lower_intrin", "LowerIntrin"),
    "tir-inject-double-buffer": ("tvmd.dialects.tir.passes.double_buffer", "InjectDoubleBuffer"),
    "tir-split-host-device": ("tvmd.dialects.tir.passes.split_host_device", "SplitHostDevice"),
    "tir-thread-sync": ("tvmd.dialects.tir.passes.thread_sync", "ThreadSync"),
    "lower-tir": ("tvmd.dialects.tir.passes.pipeline", "LowerTIR"),
    # failure paths of the pass manager, for its tests (not listed in --help)
    "test-fail": ("tvmd.testing.passes", "TestFail"),
    "test-crash": ("tvmd.testing.passes", "TestCrash"),
}

HIDDEN_PASSES = frozenset({"test-fail", "test-crash"})

# -O presets: relay.build's pass prefix, in TVM's order, each pass kept at
# the levels TVM's opt_level table allows it (SimplifyInference 0, FuseOps 0
# -- at opt level 0 every op is its own kernel --, FoldConstant 2,
# EliminateCommonSubexpr, FoldScaleAxis and CanonicalizeOps 3; AlterOpLayout
# is target-dependent: runtime/build.py adds it for llvm).  dce stands for TVM's RemoveUnusedFunctions (1) and the
# dead code TVM's graph form never holds; infer-type runs first, as in TVM.
PRESETS = {
    "O0": ["infer-type", "simplify-inference", "fuse-ops{opt-level=0}"],
    "O1": ["infer-type", "simplify-inference", "dce", "fuse-ops{opt-level=1}"],
    "O2": ["infer-type", "simplify-inference", "fold-constant", "dce", "fuse-ops"],
    "O3": ["infer-type", "simplify-inference", "cse", "fold-constant", "fold-scale-axis",
           "canonicalize", "fold-constant", "fuse-attention", "dce", "fuse-ops{opt-level=3}"],
}


def pass_group(name: str) -> str:
    """The dialect (or 'conversion') a registered pass belongs to, from
    where its module lives: for grouping --help without imports."""
    parts = PASSES[name][0].split(".")
    if parts[1] == "dialects":
        return parts[2]
    return parts[1]


def get_pass_class(name: str):
    entry = PASSES.get(name)
    if entry is None:
        return None
    try:
        mod = importlib.import_module(entry[0])
        return getattr(mod, entry[1])
    except (ImportError, AttributeError) as e:
        # a broken installation, not a user error: say which pass and why
        raise RuntimeError(f"pass '{name}' cannot be loaded from {entry[0]}: {e}") from None
