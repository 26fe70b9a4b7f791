"""Registries of dialects, ops and passes, all imported lazily.

Nothing here imports a dialect or a pass until it is asked for, so the
drivers start fast: ``tvm-opt --help`` lists the passes from the table
below without importing any of them.
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
# name -> (module, class name, one-line summary).  The summary is here, not
# only in the pass's docstring, so that --help needs no imports.

PASSES: dict[str, tuple[str, str, str]] = {
    # relay
    "infer-type": ("tvmd.dialects.relay.passes.infer_type", "InferType",
                   "infer and check the type of every relay value"),
    "fuse-ops": ("tvmd.dialects.relay.passes.fuse_ops", "FuseOps",
                 "fuse relay ops into primitive functions, one kernel each"),
    "convert-layout": ("tvmd.dialects.relay.passes.convert_layout", "ConvertLayout",
                       "convert conv2d data layouts (e.g. nn.conv2d=NHWC), transforming only at boundaries"),
    "alter-op-layout": ("tvmd.dialects.relay.passes.alter_op_layout", "AlterOpLayout",
                        "transpose constant dense weights for the llvm GEMM schedule (dense -> matmul)"),
    "fold-constant": ("tvmd.dialects.relay.passes.fold_constant", "FoldConstant",
                      "evaluate subgraphs whose inputs are all constants"),
    "dce": ("tvmd.dialects.relay.passes.dce", "DeadCodeElimination",
            "remove unused pure ops and unreachable private functions"),
    "cse": ("tvmd.dialects.relay.passes.cse", "CommonSubexprElimination",
            "merge identical pure ops"),
    "canonicalize": ("tvmd.dialects.relay.passes.canonicalize", "Canonicalize",
                     "fold and apply each op's canonicalization patterns"),
    "simplify-inference": ("tvmd.dialects.relay.passes.simplify_inference", "SimplifyInference",
                           "rewrite batch_norm, dropout and the norms for inference"),
    "fold-scale-axis": ("tvmd.dialects.relay.passes.fold_scale_axis", "FoldScaleAxis",
                        "fold per-channel scales into conv2d/dense weights"),
    "quantize": ("tvmd.dialects.relay.passes.quantize", "Quantize",
                 "quantize to int8: annotate, calibrate, realize (qnn, then integer ops)"),
    "qnn-canonicalize": ("tvmd.dialects.relay.passes.quantize.qnn_lower", "QnnCanonicalize",
                         "lower qnn ops to relay integer arithmetic (TVM's qnn CanonicalizeOps)"),
    "view-op-graph": ("tvmd.dialects.relay.passes.view_op_graph", "ViewOpGraph",
                      "write a Graphviz picture of each function's dataflow"),
    # conversions
    "lower-relay-to-te": ("tvmd.conversion.relay_to_te.pass_", "LowerRelayToTE",
                          "lower each primitive relay function to a te function with a default schedule"),
    "apply-schedule": ("tvmd.conversion.te_to_tir.apply_schedule", "ApplySchedule",
                       "carry out te schedule ops: each te function becomes explicit loop nests"),
    "lower-te-to-tir": ("tvmd.conversion.te_to_tir.lower", "LowerTEToTIR",
                        "turn scheduled te functions into tir functions over buffers"),
    # tir
    "tir-simplify": ("tvmd.dialects.tir.passes.simplify", "Simplify",
                     "fold constants and simplify index arithmetic in tir"),
    "tir-flatten-buffer": ("tvmd.dialects.tir.passes.flatten_buffer", "FlattenBuffer",
                           "flatten n-d buffer accesses to 1-d"),
    "tir-loop-partition": ("tvmd.dialects.tir.passes.loop_partition", "LoopPartition",
                           "split loops so guards vanish from the main part"),
    "tir-vectorize": ("tvmd.dialects.tir.passes.vectorize", "Vectorize",
                      "turn vectorized loops into vector operations"),
    "tir-unroll": ("tvmd.dialects.tir.passes.unroll", "Unroll",
                   "unroll loops marked unrolled (and small constant loops)"),
    "tir-remove-no-op": ("tvmd.dialects.tir.passes.remove_no_op", "RemoveNoOp",
                         "remove loops and ifs that do nothing"),
    "tir-storage-rewrite": ("tvmd.dialects.tir.passes.storage_rewrite", "StorageRewrite",
                            "share and shrink intermediate allocations"),
    "tir-lower-intrin": ("tvmd.dialects.tir.passes.lower_intrin", "LowerIntrin",
                         "lower intrinsics the target lacks to arithmetic"),
    "tir-inject-double-buffer": ("tvmd.dialects.tir.passes.double_buffer", "InjectDoubleBuffer",
                                 "double-buffer allocations marked double_buffer"),
    "tir-split-host-device": ("tvmd.dialects.tir.passes.split_host_device", "SplitHostDevice",
                              "split thread-bound parts into device kernels"),
    "tir-thread-sync": ("tvmd.dialects.tir.passes.thread_sync", "ThreadSync",
                        "insert barriers around shared-memory accesses"),
    "lower-tir": ("tvmd.dialects.tir.passes.pipeline", "LowerTIR",
                  "the standard tir pipeline for a target (simplify, partition, vectorize, unroll, ...)"),
    # failure paths of the pass manager, for its tests (not listed in --help)
    "test-fail": ("tvmd.testing.passes", "TestFail", "report an error at the first op"),
    "test-crash": ("tvmd.testing.passes", "TestCrash", "raise an internal error"),
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
           "canonicalize", "fold-constant", "dce", "fuse-ops{opt-level=3}"],
}


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
