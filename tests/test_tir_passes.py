"""The tir passes (flatten-buffer, loop-partition, vectorize, unroll,
remove-no-op, storage-rewrite, lower-intrin, inject-double-buffer and the
lower-tir pipeline): what each one changes, and that no pass, and no order
of passes, changes what a function computes -- through the tir interpreter
and through the LLVM JIT, on every kernel in tests/tir_kernels and on tir
lowered from te."""

import glob
import math
import os
import sys
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tvmd.dialects.tir.interpreter import run
from tvmd.ir import types as T
from tvmd.ir.pass_manager import PassContext, PassManager
from tvmd.ir.printer import print_module
from tvmd.ir.registry import get_pass_class
from tvmd.ir.verifier import verify
from tvmd.parser import parse_module

sys.path.insert(0, os.path.dirname(__file__))
from tools import tvm_opt  # noqa: E402

KERNELS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "tir_kernels", "*.tir")))
KERNEL_IDS = [os.path.basename(k)[:-4] for k in KERNELS]

PASSES = ["tir-flatten-buffer", "tir-flatten-buffer{flatten-params=true}", "tir-loop-partition",
          "tir-vectorize", "tir-unroll", "tir-unroll{auto-max-step=64}", "tir-remove-no-op",
          "tir-storage-rewrite", "tir-flatten-buffer,tir-storage-rewrite{merge-max-bytes=4096}", "tir-lower-intrin", "tir-lower-intrin{erf=poly}",
          "tir-lower-intrin{target=cuda}", "tir-inject-double-buffer", "lower-tir",
          "tir-flatten-buffer,lower-tir"]
# the ones a random pipeline draws from
ORDERABLE = ["tir-simplify", "tir-flatten-buffer", "tir-loop-partition", "tir-vectorize", "tir-unroll",
             "tir-remove-no-op", "tir-storage-rewrite", "tir-storage-rewrite{merge-max-bytes=256}",
             "tir-lower-intrin{erf=poly}",
             "tir-inject-double-buffer"]


def _instances(passes):
    out = []
    for item in _split(passes):
        name, _, opts = item.partition("{")
        cls = get_pass_class(name)
        p = cls.from_options(opts.rstrip("}")) if opts else cls()
        out.append(p)
    return out


def _split(text):
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    items.append(cur)
    return [i.strip() for i in items if i.strip()]


def transform(module, passes):
    """Apply the passes directly (each pass's run with one PassContext)."""
    ctx = PassContext()
    for p in _instances(passes):
        p.run(module, ctx)
        verify(module)
    return ctx.stats


# -- inputs -------------------------------------------------------------------

DYN = 37          # size of each dynamic dimension
INDEX_ARG = 29    # value of each index argument (<= DYN)


def inputs(func, seed=0):
    """Random arguments for `func`: floats in (0.1, 2) (log, sqrt and pow
    stay real), and fixed values for index arguments and dynamic sizes."""
    rng = np.random.default_rng(seed)
    args = []
    for a in func.args:
        t = a.type
        if isinstance(t, T.MemRefType):
            shape = tuple(DYN if d is None else d for d in t.shape)
            dt = T.to_numpy_dtype(t.element_type)
            args.append(rng.uniform(0.1, 2.0, shape).astype(dt))
        elif t is T.index:
            args.append(INDEX_ARG)
        else:
            args.append(T.to_numpy_dtype(t).type(rng.uniform(-1, 1)))
    return args


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def interpret(func, args):
    """Run the tir interpreter on copies; all buffer arguments after the run."""
    args = _copy(args)
    run(func, *args)
    return [a for a in args if isinstance(a, np.ndarray)]


def reshape_for(func, args):
    """Views of `args` shaped as `func`'s parameters (after flatten-params)."""
    out = []
    for p, a in zip(func.args, args, strict=True):
        if isinstance(a, np.ndarray) and isinstance(p.type, T.MemRefType) and p.type.rank != a.ndim:
            out.append(a.reshape(tuple(d for d in p.type.shape)))
        else:
            out.append(a)
    return out


def has_barrier(module):
    return any(op.name == "tir.barrier" for op in module.walk())


def funcs(module):
    return [op for op in module.body.ops if op.name == "tir.func"]


def paired(before, after):
    """The tir.funcs of `before` and `after` paired by symbol name: a pass
    may neither drop, add nor rename a function, and there must be one."""
    b = {f.sym_name: f for f in funcs(before)}
    a = {f.sym_name: f for f in funcs(after)}
    assert b, "no tir.func to compare"
    assert len(b) == len(funcs(before)) and len(a) == len(funcs(after)), "duplicate function names"
    assert sorted(a) == sorted(b), f"functions before {sorted(b)} and after {sorted(a)} differ"
    return [(b[n], a[n]) for n in sorted(b)]


def stable_seed(name):
    """A seed from a name, the same in every process (hash() is not: PYTHONHASHSEED)."""
    return zlib.crc32(name.encode("utf-8")) % 1000


def check_same(got, want, what):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g.reshape(w.shape), w, rtol=2e-5, atol=2e-6, err_msg=f"{what}: buffer {i}")


def load_kernel(path):
    with open(path) as f:
        return parse_module(f.read())


# -- every pass on every kernel: interpreter and LLVM JIT ----------------------

@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("path", KERNELS, ids=KERNEL_IDS)
def test_pass_preserves_kernel_semantics(path, passes):
    from tvmd.backend.llvm import jit
    before = load_kernel(path)
    after = load_kernel(path)
    transform(after, passes)
    printed = print_module(after)
    assert print_module(parse_module(printed)) == printed
    lib = None if has_barrier(after) else jit.compile(after, opt_level=1)
    for f0, f1 in paired(before, after):
        args = inputs(f0, seed=stable_seed(f0.sym_name))
        want = interpret(f0, args)
        got = interpret(f1, reshape_for(f1, args))
        check_same(got, want, f"interpreter after {passes} on @{f0.sym_name}")
        if lib is not None:
            jargs = reshape_for(f1, _copy(args))
            lib[f1.sym_name](*jargs)
            check_same([a for a in jargs if isinstance(a, np.ndarray)], want,
                       f"LLVM JIT after {passes} on @{f0.sym_name}")


# -- te computes lowered to tir -----------------------------------------------

TE_CASES = {
    # name: (relay function, numpy reference on the inputs)
    "add_exp_tail": ("""relay.func @k(%x: tensor<2x3x30xf32>, %y: tensor<30xf32>) -> tensor<2x3x30xf32> attributes {primitive} {
  %a = add(%x, %y)
  %r = exp(%a)
  return %r
}""", lambda x, y: np.exp(x + y)),
    "dense": ("""relay.func @k(%x: tensor<5x20xf32>, %w: tensor<12x20xf32>) -> tensor<5x12xf32> attributes {primitive} {
  %a = nn.dense(%x, %w)
  return %a
}""", lambda x, w: x @ w.T),
    "sigmoid_mul": ("""relay.func @k(%x: tensor<7x33xf32>) -> tensor<7x33xf32> attributes {primitive} {
  %s = sigmoid(%x)
  %m = multiply(%s, %x)
  return %m
}""", lambda x: x / (1 + np.exp(-x))),
    "erf": ("""relay.func @k(%x: tensor<4x40xf32>) -> tensor<4x40xf32> attributes {primitive} {
  %e = erf(%x)
  return %e
}""", lambda x: np.vectorize(math.erf)(x.astype(np.float64))),
}


def lowered(text):
    m = parse_module(text)
    for name in ("lower-relay-to-te", "lower-te-to-tir"):
        PassManager([(None, get_pass_class(name)())]).run(m)
    return m


@pytest.mark.parametrize("passes", ["lower-tir", "tir-flatten-buffer,lower-tir", "tir-loop-partition,tir-vectorize",
                                    "tir-unroll{auto-max-step=16},tir-storage-rewrite",
                                    "tir-lower-intrin{erf=poly},tir-remove-no-op"])
@pytest.mark.parametrize("case", sorted(TE_CASES))
def test_lowered_te_against_numpy(case, passes):
    from tvmd.backend.llvm import jit
    text, ref = TE_CASES[case]
    m = lowered(text)
    transform(m, passes)
    (f,) = funcs(m)
    rng = np.random.default_rng(7)
    xs = [rng.uniform(-3, 3, a.type.shape).astype(np.float32) for a in f.inputs]
    want = ref(*xs)
    out = np.full(f.outputs[0].type.shape, np.nan, np.float32)
    run(f, *xs, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    out2 = np.full_like(out, np.nan)
    jit.compile(m, opt_level=1)[f.sym_name](*xs, out2)
    np.testing.assert_allclose(out2, want, rtol=1e-5, atol=1e-6)


# -- random pass orders --------------------------------------------------------

_LOWERED: dict = {}


def source(kernel):
    """A fresh module: a kernel file, or ("te", case) lowered from relay."""
    if isinstance(kernel, tuple):
        if kernel[1] not in _LOWERED:
            _LOWERED[kernel[1]] = print_module(lowered(TE_CASES[kernel[1]][0]))
        return parse_module(_LOWERED[kernel[1]])
    return load_kernel(kernel)


@settings(max_examples=500 if os.environ.get("TVMD_FUZZ") else 40, deadline=None)
@given(kernel=st.sampled_from(KERNELS + [("te", c) for c in sorted(TE_CASES)]),
       order=st.lists(st.sampled_from(ORDERABLE), min_size=1, max_size=6))
def test_random_pass_orders_preserve_semantics(kernel, order):
    before = source(kernel)
    after = source(kernel)
    transform(after, ",".join(order))
    for f0, f1 in paired(before, after):
        args = inputs(f0, seed=3)
        check_same(interpret(f1, args), interpret(f0, args), f"{order} on @{f0.sym_name}")


# -- what each pass does -------------------------------------------------------

def ops(m, name):
    return [o for o in m.walk() if o.name == name]


def kernel(name):
    return load_kernel(os.path.join(os.path.dirname(__file__), "tir_kernels", name + ".tir"))


def test_loop_partition_moves_the_tail_guard_to_the_last_tile():
    m = kernel("add_relu_1d")
    stats = transform(m, "tir-loop-partition")
    loops = [o for o in m.walk() if o.name == "tir.for"]
    main = next(lp for lp in loops if lp.kind == "parallel")
    assert (main.lower, main.upper) == (0, 15)
    assert not any(o.name == "tir.if" for o in main.walk())
    # the tail tile: v < 40 runs unguarded, the rest (provably out of range) is gone
    assert not ops(m, "tir.if")
    assert stats["tir-loop-partition"]["loops-partitioned"] == 2
    inner = sorted((lp.lower, lp.upper) for lp in loops if lp.kind == "vectorized")
    assert inner == [(0, 40), (0, 64)]


def test_loop_partition_pad_guard_on_both_sides():
    m = parse_module("""
tir.func @pad(%A: memref<8xf32>, %B: memref<12xf32>) {
  tir.for %i = 0 to 12 {
    %c2 = arith.constant 2 : index
    %c10 = arith.constant 10 : index
    %lo = arith.cmpi sge, %i, %c2 : index
    %hi = arith.cmpi slt, %i, %c10 : index
    %in = arith.andi %lo, %hi : i1
    tir.if %in {
      %j = arith.subi %i, %c2 : index
      %v = tir.load %A[%j] : f32
      tir.store %v, %B[%i] : f32
    } else {
      %z = arith.constant 0.0 : f32
      tir.store %z, %B[%i] : f32
    }
  }
}""")
    transform(m, "tir-loop-partition")
    loops = [(lp.lower, lp.upper) for lp in ops(m, "tir.for")]
    assert loops == [(0, 2), (2, 10), (10, 12)]
    assert not ops(m, "tir.if")   # the edges take the else branch, the middle the then branch
    a = np.arange(8, dtype=np.float32) + 1
    b = np.full(12, np.nan, np.float32)
    run(m.body.first, a, b)
    np.testing.assert_array_equal(b, np.pad(a, 2))


def test_loop_partition_leaves_nonlinear_guards():
    m = parse_module("""
tir.func @f(%A: memref<16xf32>) {
  tir.for %i = 0 to 16 {
    %c3 = arith.constant 3 : index
    %c0 = arith.constant 0 : index
    %r = arith.floormodsi %i, %c3 : index
    %ok = arith.cmpi eq, %r, %c0 : index
    tir.if %ok {
      %z = arith.constant 0.0 : f32
      tir.store %z, %A[%i] : f32
    }
  }
}""")
    transform(m, "tir-loop-partition")
    assert len(ops(m, "tir.for")) == 1 and len(ops(m, "tir.if")) == 1


def test_vectorize_matmul_inner_loops():
    m = kernel("matmul_tiled")
    stats = transform(m, "tir-vectorize")
    assert not [lp for lp in ops(m, "tir.for") if lp.kind == "vectorized"]
    assert stats["tir-vectorize"]["loops-vectorized"] == 2
    vec = {str(o.results[0].type) for o in ops(m, "tir.load") if isinstance(o.results[0].type, T.VectorType)}
    assert vec == {"vector<16xf32>"}
    # the row value of A is loop-invariant: one scalar load, broadcast
    assert len(ops(m, "tir.broadcast")) == 2


def test_vectorize_keeps_gathers_and_dependent_loops():
    m = parse_module("""
tir.func @f(%A: memref<8x8xf32>, %B: memref<8xf32>, %C: memref<9xf32>) {
  tir.for %j = 0 to 8 vectorized {
    %c0 = arith.constant 0 : index
    %a = tir.load %A[%j, %c0] : f32
    tir.store %a, %B[%j] : f32
  }
  tir.for %j = 0 to 8 vectorized {
    %c1 = arith.constant 1 : index
    %k = arith.addi %j, %c1 : index
    %a = tir.load %C[%j] : f32
    tir.store %a, %C[%k] : f32
  }
}""")
    stats = transform(m, "tir-vectorize")
    assert len([lp for lp in ops(m, "tir.for") if lp.kind == "vectorized"]) == 2
    assert stats["tir-vectorize"]["loops-kept"] == 2


def test_unroll_unrolled_loops_and_pragma():
    m = kernel("matmul_tiled")
    transform(m, "tir-unroll")
    assert not [lp for lp in ops(m, "tir.for") if lp.kind == "unrolled"]
    assert len(ops(m, "tir.load")) == 8 * 3   # the A, B and C loads, once per unrolled row
    m = parse_module("""
tir.func @f(%A: memref<4x4xf32>) {
  tir.for %i = 0 to 4 attributes {pragma_auto_unroll_max_step = 16} {
    tir.for %j = 0 to 4 {
      %z = arith.constant 0.0 : f32
      tir.store %z, %A[%i, %j] : f32
    }
  }
}""")
    transform(m, "tir-unroll")
    assert not ops(m, "tir.for") and len(ops(m, "tir.store")) == 16
    m = parse_module("""
tir.func @f(%A: memref<100xf32>) {
  tir.for %i = 0 to 100 unrolled {
    %z = arith.constant 0.0 : f32
    tir.store %z, %A[%i] : f32
  }
}""")
    transform(m, "tir-unroll{max-step=64}")
    assert len(ops(m, "tir.for")) == 1   # longer than max-step: left to LLVM's unroller


def test_remove_no_op():
    m = parse_module("""
tir.func @f(%A: memref<16xf32>, %B: memref<16xf32>) {
  %T = tir.alloc : memref<16xf32>
  tir.for %i = 0 to 16 {
    %v = tir.load %A[%i] : f32
    tir.store %v, %A[%i] : f32
    tir.store %v, %T[%i] : f32
  }
  tir.for %i = 4 to 4 {
    %v = tir.load %A[%i] : f32
    tir.store %v, %B[%i] : f32
  }
  %t = arith.constant true : i1
  tir.if %t {
    tir.for %i = 0 to 16 {
      %v = tir.load %A[%i] : f32
      tir.store %v, %B[%i] : f32
    }
  }
}""")
    stats = transform(m, "tir-remove-no-op")["tir-remove-no-op"]
    assert [o.name for o in m.body.first.body.ops] == ["tir.for"]
    assert stats["stores-removed"] == 1 and stats["allocs-removed"] == 1 and stats["ifs-removed"] == 1


def test_remove_no_op_keeps_store_after_intervening_write():
    m = parse_module("""
tir.func @f(%A: memref<16xf32>) {
  tir.for %i = 0 to 16 {
    %v = tir.load %A[%i] : f32
    %z = arith.constant 0.0 : f32
    tir.store %z, %A[%i] : f32
    tir.store %v, %A[%i] : f32
  }
}""")
    transform(m, "tir-remove-no-op")
    assert len(ops(m, "tir.store")) == 2


def test_storage_rewrite_shares_dead_buffers():
    text = """
tir.func @f(%A: memref<64xf32>, %B: memref<64xf32>) {
  %T1 = tir.alloc : memref<4x16xf32>
  %T2 = tir.alloc : memref<32xf32>
  %T3 = tir.alloc : memref<64xi32>
  tir.for %i = 0 to 4 {
    tir.for %j = 0 to 16 {
      %c16 = arith.constant 16 : index
      %r = arith.muli %i, %c16 : index
      %k = arith.addi %r, %j : index
      %a = tir.load %A[%k] : f32
      tir.store %a, %T1[%i, %j] : f32
      %n = arith.fptosi %a : f32 to i32
      tir.store %n, %T3[%k] : i32
    }
  }
  tir.for %i = 0 to 4 {
    tir.for %j = 0 to 16 {
      %c16 = arith.constant 16 : index
      %r = arith.muli %i, %c16 : index
      %k = arith.addi %r, %j : index
      %a = tir.load %T1[%i, %j] : f32
      %n = tir.load %T3[%k] : i32
      %f = arith.sitofp %n : i32 to f32
      %s = arith.addf %a, %f : f32
      tir.store %s, %B[%k] : f32
    }
  }
  tir.for %i = 0 to 32 {
    %a = tir.load %B[%i] : f32
    %e = tir.intrin "exp"(%a) : f32
    tir.store %e, %T2[%i] : f32
  }
  tir.for %i = 0 to 32 {
    %a = tir.load %T2[%i] : f32
    tir.store %a, %B[%i] : f32
  }
}"""
    m = parse_module(text)
    # n-d T1 cannot host the 1-d T2 until flattened; the i32 buffer never shares with floats
    assert not transform(m, "tir-storage-rewrite")
    assert len(ops(m, "tir.alloc")) == 3
    m = parse_module(text)
    stats = transform(m, "tir-flatten-buffer,tir-storage-rewrite")
    assert stats["tir-storage-rewrite"]["allocs-reused"] == 1
    assert sorted(str(o.results[0].type) for o in ops(m, "tir.alloc")) == ["memref<64xf32>", "memref<64xi32>"]
    a = np.random.default_rng(0).uniform(-2, 2, 64).astype(np.float32)
    f0 = parse_module(text).body.first
    want = interpret(f0, [a, np.zeros(64, np.float32)])
    check_same(interpret(m.body.first, [a, np.zeros(64, np.float32)]), want, "storage-rewrite")


def test_storage_rewrite_keeps_overlapping_buffers():
    m = kernel("alloc_intermediate")
    assert not transform(m, "tir-storage-rewrite")


def test_flatten_buffer_makes_accesses_1d():
    m = kernel("alloc_intermediate")
    transform(m, "tir-flatten-buffer{flatten-params=true}")
    for o in ops(m, "tir.load") + ops(m, "tir.store"):
        buf = o.operands[0 if o.name == "tir.load" else 1]
        assert buf.type.rank == 1 and len(o.operands) == (2 if o.name == "tir.load" else 3)
    assert [str(a.type) for a in m.body.first.args] == ["memref<256xf32>", "memref<256xf32>"]
    m = kernel("dynamic")
    transform(m, "tir-flatten-buffer{flatten-params=true}")
    assert str(m.lookup("iota2d").args[2].type) == "memref<?x?xf32>"   # dynamic: kept


def test_lower_intrin():
    m = kernel("intrinsics")
    stats = transform(m, "tir-lower-intrin")
    names = [o.attributes["intrin"] for o in ops(m, "tir.intrin")]
    assert "sigmoid" not in names and "rsqrt" not in names and "erf" in names   # scalar erf: libm
    assert stats["tir-lower-intrin"]["intrinsics-lowered"] == 2
    m = kernel("intrinsics")
    transform(m, "tir-lower-intrin{target=cuda}")
    names = [o.attributes["intrin"] for o in ops(m, "tir.intrin")]
    assert "sigmoid" not in names and "rsqrt" in names and "erf" in names
    m = kernel("vector")
    transform(m, "tir-lower-intrin")
    assert "erf" not in [o.attributes["intrin"] for o in ops(m, "tir.intrin")]   # vector erf: polynomial


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_erf_polynomial_accuracy(dtype):
    m = parse_module(f"""
tir.func @f(%A: memref<4001x{dtype}>, %B: memref<4001x{dtype}>) {{
  tir.for %i = 0 to 4001 {{
    %a = tir.load %A[%i] : {dtype}
    %e = tir.intrin "erf"(%a) : {dtype}
    tir.store %e, %B[%i] : {dtype}
  }}
}}""")
    transform(m, "tir-lower-intrin{erf=poly}")
    assert not ops(m, "tir.intrin") or all(o.attributes["intrin"] != "erf" for o in ops(m, "tir.intrin"))
    np_dt = np.float32 if dtype == "f32" else np.float16
    x = np.linspace(-6, 6, 4001).astype(np_dt)
    x[2000] = 0.0
    x[:3] = [0.4999, -0.5, 1e-4]
    out = np.zeros_like(x)
    run(m.body.first, x, out)
    ref = np.vectorize(math.erf)(x.astype(np.float64))
    if dtype == "f32":
        assert np.max(np.abs(out - ref)) < 1e-6
        small = np.abs(x) < 0.5
        np.testing.assert_allclose(out[small], ref[small], rtol=1e-6, atol=1e-12)
    else:
        np.testing.assert_allclose(out, ref, atol=2e-3)


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_tanh_lowering_accuracy(dtype):
    """Vector tanh (the series below 0.55, exp above) against numpy, tiny,
    huge and infinite inputs and NaN included."""
    m = parse_module(f"""
tir.func @f(%A: memref<4096x{dtype}>, %B: memref<4096x{dtype}>) {{
  tir.for %i = 0 to 4096 vectorized {{
    %a = tir.load %A[%i] : {dtype}
    %e = tir.intrin "tanh"(%a) : {dtype}
    tir.store %e, %B[%i] : {dtype}
  }}
}}""")
    transform(m, "tir-lower-intrin{tanh=poly}")
    assert all(o.attributes["intrin"] != "tanh" for o in ops(m, "tir.intrin"))
    np_dt = np.float32 if dtype == "f32" else np.float16
    x = np.linspace(-12, 12, 4096).astype(np_dt)
    x[:8] = [0.5499, -0.55, 1e-4, -3e-8, 0.0, 60.0, -np.inf, np.nan]
    out = np.zeros_like(x)
    run(m.body.first, x, out)
    ref = np.tanh(x.astype(np.float64))
    if dtype == "f32":
        np.testing.assert_allclose(out, ref, rtol=2e-7, atol=1e-8)
    else:
        np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3)


def test_vector_tanh_compiles_to_the_lowering_and_matches_numpy():
    """Through the llvm pipeline: no tanh libm call left for vectors."""
    from tvmd.backend.llvm import jit
    m = parse_module("""
tir.func @f(%A: memref<1024xf32>, %B: memref<1024xf32>) {
  tir.for %o = 0 to 64 {
    tir.for %v = 0 to 16 vectorized {
      %c = arith.constant 16 : index
      %b = arith.muli %o, %c : index
      %i = arith.addi %b, %v : index
      %a = tir.load %A[%i] : f32
      %e = tir.intrin "tanh"(%a) : f32
      tir.store %e, %B[%i] : f32
    }
  }
}""")
    transform(m, "lower-tir")
    assert all(o.attributes["intrin"] != "tanh" for o in ops(m, "tir.intrin"))
    x = np.linspace(-9, 9, 1024).astype(np.float32)
    out = np.zeros_like(x)
    jit.compile(m)["f"](x, out)
    np.testing.assert_allclose(out, np.tanh(x.astype(np.float64)), rtol=2e-7, atol=1e-8)


DOUBLE = """
tir.func @db(%A: memref<8x16xf32>, %B: memref<8x16xf32>) {
  tir.for %k = 0 to 8 {
    %S = tir.alloc {double_buffer} : memref<16xf32, "local">
    tir.for %j = 0 to 16 {
      %a = tir.load %A[%k, %j] : f32
      %two = arith.constant 2.0 : f32
      %m = arith.mulf %a, %two : f32
      tir.store %m, %S[%j] : f32
    }
    tir.for %j = 0 to 16 {
      %c15 = arith.constant 15 : index
      %r = arith.subi %c15, %j : index
      %s = tir.load %S[%r] : f32
      %e = tir.intrin "exp"(%s) : f32
      tir.store %e, %B[%k, %j] : f32
    }
  }
}"""


def test_inject_double_buffer():
    from tvmd.backend.llvm import jit
    m = parse_module(DOUBLE)
    assert "tir.alloc {double_buffer} : memref<16xf32, \"local\">" in print_module(m)
    stats = transform(m, "tir-inject-double-buffer")
    assert stats["tir-inject-double-buffer"]["buffers-doubled"] == 1
    (alloc,) = ops(m, "tir.alloc")
    assert str(alloc.results[0].type) == 'memref<2x16xf32, "local">'
    assert alloc.parent_op.name == "tir.func"   # hoisted out of the loop
    prologue, loop = [o for o in m.body.first.body.ops if o.name == "tir.for"]
    assert prologue.upper == 16   # the fill of k = 0
    (guard,) = [o for o in loop.body.ops if o.name == "tir.if"]   # the fill of k+1, then compute of k
    assert any(o.name == "tir.store" for o in guard.walk())
    a = np.random.default_rng(1).uniform(-1, 1, (8, 16)).astype(np.float32)
    want = np.exp(2 * a[:, ::-1])
    b = np.zeros_like(a)
    run(m.body.first, a, b)
    np.testing.assert_allclose(b, want, rtol=1e-6)
    b2 = np.zeros_like(a)
    jit.compile(m)["db"](a, b2)
    np.testing.assert_allclose(b2, want, rtol=1e-6)


def test_inject_double_buffer_skips_when_fill_reads_what_compute_writes():
    text = DOUBLE.replace("tir.store %e, %B[%k, %j] : f32",
                          "tir.store %e, %B[%k, %j] : f32\n      tir.store %e, %A[%k, %j] : f32")
    m = parse_module(text)
    stats = transform(m, "tir-inject-double-buffer")
    assert stats["tir-inject-double-buffer"]["skipped"] == 1
    assert len(ops(m, "tir.alloc")) == 1 and ops(m, "tir.alloc")[0].results[0].type.shape == (16,)


def test_lower_tir_pipeline_order_and_cuda_differences():
    from tvmd.dialects.tir.passes.pipeline import LowerTIR
    names = [p.NAME for p in LowerTIR().passes()]
    assert names[:5] == ["tir-serialize-small-parallel", "tir-inject-double-buffer", "tir-simplify",
                         "tir-loop-partition", "tir-simplify"]
    assert names.index("tir-vectorize") < names.index("tir-unroll") < names.index("tir-lower-intrin")
    cuda_passes = LowerTIR(target="cuda").passes()
    cuda = [p.NAME for p in cuda_passes]
    assert "tir-serialize-small-parallel" not in cuda
    # for cuda, vectorize makes only a thread's float4: at most 4 lanes
    assert next(p for p in cuda_passes if p.NAME == "tir-vectorize").max_lanes == 4
    lower = next(p for p in LowerTIR(target="cuda").passes() if p.NAME == "tir-lower-intrin")
    assert lower.target == "cuda"


def test_lower_tir_on_add_relu_1d_is_guard_free_vector_code():
    m = kernel("add_relu_1d")
    transform(m, "lower-tir")
    assert not ops(m, "tir.if")
    assert {str(o.results[0].type) for o in ops(m, "tir.load")} == {"vector<64xf32>", "vector<40xf32>"}


@pytest.mark.parametrize("opt,msg", [("tir-lower-intrin{target=rocm}", "target must be llvm or cuda"),
                                     ("tir-lower-intrin{erf=fast}", "erf must be"),
                                     ("lower-tir{target=x86}", "target must be llvm or cuda"),
                                     ("tir-vectorize{max-lanes=0}", "max-lanes")])
def test_bad_options_are_diagnostics(opt, msg):
    r = tvm_opt(*[os.path.join(os.path.dirname(__file__), "tir_kernels", "vector.tir"),
                  f"--pass-pipeline={opt}"])
    assert r.returncode == 1 and msg in r.stderr and "Traceback" not in r.stderr


def test_storage_rewrite_never_shares_within_one_statement():
    """T1's last use and T2's first use are the same loop: sharing would
    make the reversal read what it has just overwritten."""
    text = """
tir.func @f(%A: memref<16xf32>, %B: memref<16xf32>) {
  %T1 = tir.alloc : memref<16xf32>
  %T2 = tir.alloc : memref<16xf32>
  tir.for %i = 0 to 16 {
    %a = tir.load %A[%i] : f32
    tir.store %a, %T1[%i] : f32
  }
  tir.for %i = 0 to 16 {
    %c15 = arith.constant 15 : index
    %r = arith.subi %c15, %i : index
    %a = tir.load %T1[%r] : f32
    tir.store %a, %T2[%i] : f32
  }
  tir.for %i = 0 to 16 {
    %a = tir.load %T2[%i] : f32
    tir.store %a, %B[%i] : f32
  }
}"""
    m = parse_module(text)
    assert not transform(m, "tir-storage-rewrite")
    a = np.arange(16, dtype=np.float32)
    b = np.zeros(16, np.float32)
    run(m.body.first, a, b)
    np.testing.assert_array_equal(b, a[::-1])


def test_broadcast_op_checks_its_types():
    m = parse_module("""
tir.func @f(%A: memref<8xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %v = tir.broadcast %x : vector<8xf32>
  tir.store %v, %A[%c0] : vector<8xf32>
}""")
    printed = print_module(m)
    assert "%v = tir.broadcast %x : vector<8xf32>" in printed
    a = np.zeros(8, np.float32)
    run(m.body.first, a, np.float32(2.5))
    assert (a == 2.5).all()
    r = tvm_opt("-", stdin="""tir.func @f(%x: f32, %A: memref<8xf32>) {
  %v = tir.broadcast %x : vector<8xf64>
}""")
    assert r.returncode == 1 and "element types differ" in r.stderr and "Traceback" not in r.stderr


TE_DOUBLE = """te.func @mm(%A: tensor<8x16xf32>, %B: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %C = te.compute [%i, %j] reduce [%k: 16] "sum" : tensor<8x8xf32> {
    %a = te.read %A[%i, %k] : f32
    %b = te.read %B[%k, %j] : f32
    %m = arith.mulf %a, %b : f32
    yield %m
  }
  %AS = te.cache_read %A, %C {scope = "local"} : tensor<8x16xf32>
  %i, %j, %k = te.axes %C
  %ko, %ki = te.split %k {factor = 4}
  te.reorder %ko, %i, %j, %ki
  te.compute_at %AS, %ko
  te.double_buffer %AS
  return %C
}"""


@pytest.mark.parametrize("passes", ["tir-inject-double-buffer", "lower-tir"])
def test_double_buffer_from_te_schedule(passes):
    """te.double_buffer on a cache_read staged per k-tile: the tile for
    ko+1 is loaded while ko computes; numbers against numpy."""
    from tvmd.backend.llvm import jit
    m = parse_module(TE_DOUBLE)
    PassManager([(None, get_pass_class("lower-te-to-tir")())]).run(m)
    assert any(o.attributes.get("double_buffer") is not None for o in ops(m, "tir.alloc"))
    stats = transform(m, passes)
    assert stats["tir-inject-double-buffer"]["buffers-doubled"] == 1
    assert [o.results[0].type.shape for o in ops(m, "tir.alloc")] == [(2, 8, 4)]
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (8, 16)).astype(np.float32)
    b = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    c = np.full((8, 8), np.nan, np.float32)
    run(m.body.first, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-6)
    c2 = np.full((8, 8), np.nan, np.float32)
    jit.compile(m)["mm"](a, b, c2)
    np.testing.assert_allclose(c2, a @ b, rtol=1e-5, atol=1e-6)


@st.composite
def guarded_nests(draw):
    """A two-deep loop nest over i = k*o + v with a random (possibly
    two-sided) guard on i, an else branch or none, the inner loop of a
    random kind: the shapes loop-partition and vectorize work on."""
    k = draw(st.integers(1, 9))
    lo1, lo2 = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    hi1, hi2 = lo1 + draw(st.integers(0, 6)), lo2 + draw(st.integers(0, 12))
    size = k * max(hi1 - 1, 0) + max(hi2 - 1, 0) + 1
    kind = draw(st.sampled_from(["", " vectorized", " vectorized", " unrolled", " parallel"]))
    preds = ["slt", "sle", "sgt", "sge"]
    p1, p2 = draw(st.sampled_from(preds)), draw(st.sampled_from(preds))
    n1, n2 = draw(st.integers(-2, size + 2)), draw(st.integers(-2, size + 2))
    swap = draw(st.booleans())
    two = draw(st.booleans())
    has_else = draw(st.booleans())
    cmp1 = f"arith.cmpi {p1}, %n1, %i : index" if swap else f"arith.cmpi {p1}, %i, %n1 : index"
    cond = "%c1"
    second = ""
    if two:
        second = f"""      %n2 = arith.constant {n2} : index
      %c2 = arith.cmpi {p2}, %i, %n2 : index
      %c = arith.andi %c1, %c2 : i1
"""
        cond = "%c"
    els = """ else {
        %z = arith.constant -1.0 : f32
        tir.store %z, %B[%i] : f32
      }""" if has_else else ""
    return f"""tir.func @g(%A: memref<{size}xf32>, %B: memref<{size}xf32>) {{
  tir.for %o = {lo1} to {hi1} {{
    tir.for %v = {lo2} to {hi2}{kind} {{
      %k = arith.constant {k} : index
      %base = arith.muli %o, %k : index
      %i = arith.addi %base, %v : index
      %n1 = arith.constant {n1} : index
      %c1 = {cmp1}
{second}      tir.if {cond} {{
        %a = tir.load %A[%i] : f32
        %e = arith.mulf %a, %a : f32
        tir.store %e, %B[%i] : f32
      }}{els}
    }}
  }}
}}"""


@settings(max_examples=500 if os.environ.get("TVMD_FUZZ") else 40, deadline=None)
@given(text=guarded_nests(),
       order=st.lists(st.sampled_from(["tir-loop-partition", "tir-simplify", "tir-vectorize", "tir-unroll",
                                       "tir-remove-no-op", "tir-flatten-buffer"]), min_size=1, max_size=5))
def test_random_guarded_nests_partition_and_vectorize(text, order):
    before = parse_module(text)
    after = parse_module(text)
    transform(after, ",".join(["tir-loop-partition"] + order + ["tir-vectorize"]))
    f0, f1 = before.body.first, after.body.first
    args = inputs(f0, seed=11)
    check_same(interpret(f1, args), interpret(f0, args), f"{order} on\n{text}")


def test_storage_rewrite_merges_small_allocs():
    text = """
tir.func @f(%A: memref<16xf32>, %B: memref<16xf32>) {
  %T1 = tir.alloc : memref<16xf32, "local">
  %T2 = tir.alloc : memref<8xf32, "local">
  %Big = tir.alloc : memref<4096xf32, "local">
  tir.for %i = 0 to 16 {
    %a = tir.load %A[%i] : f32
    tir.store %a, %T1[%i] : f32
    tir.store %a, %Big[%i] : f32
  }
  tir.for %i = 0 to 8 {
    %c8 = arith.constant 8 : index
    %j = arith.addi %i, %c8 : index
    %a = tir.load %T1[%j] : f32
    %b = tir.load %T1[%i] : f32
    %s = arith.addf %a, %b : f32
    tir.store %s, %T2[%i] : f32
  }
  tir.for %i = 0 to 16 {
    %c8 = arith.constant 8 : index
    %j = arith.floormodsi %i, %c8 : index
    %t = tir.load %T2[%j] : f32
    %g = tir.load %Big[%i] : f32
    %s = arith.mulf %t, %g : f32
    tir.store %s, %B[%i] : f32
  }
}"""
    m = parse_module(text)
    stats = transform(m, "tir-storage-rewrite{merge-max-bytes=1024}")
    assert stats["tir-storage-rewrite"]["allocs-merged"] == 1
    assert sorted(str(o.results[0].type) for o in ops(m, "tir.alloc")) == \
        ['memref<24xf32, "local">', 'memref<4096xf32, "local">']
    a = np.random.default_rng(2).uniform(-1, 1, 16).astype(np.float32)
    want = np.tile(a[8:] + a[:8], 2) * a
    b = np.zeros(16, np.float32)
    run(m.body.first, a, b)
    np.testing.assert_allclose(b, want, rtol=1e-6)


# -- integer and bool kernels (regressions) --------------------------------------

def _int_inputs(func, seed, shift_amounts=False):
    """Random arguments of each buffer's own dtype: bools, integers over the
    whole range (shift amounts: around and past the bit width, negative
    ones included), floats in (-2, 2)."""
    rng = np.random.default_rng(seed)
    args = []
    for a in func.args:
        t = a.type
        dt = np.dtype(T.to_numpy_dtype(t.element_type))
        if dt == np.bool_:
            args.append(rng.integers(0, 2, t.shape).astype(np.bool_))
        elif dt.kind == "i" and shift_amounts and a is func.args[1]:
            w = dt.itemsize * 8
            args.append(rng.integers(-w - 3, w + 4, t.shape).astype(dt))
        elif dt.kind == "i":
            info = np.iinfo(dt)
            args.append(rng.integers(info.min, info.max, t.shape, dtype=dt, endpoint=True))
        else:
            args.append(rng.uniform(-2, 2, t.shape).astype(dt))
    return args


def _check_interp_and_jit(text, passes, seed=0, shift_amounts=False):
    """`text` after `passes`, through the interpreter and the LLVM JIT, gives
    what the interpreter gives on `text` unchanged."""
    from tvmd.backend.llvm import jit
    before, after = parse_module(text), parse_module(text)
    transform(after, passes)
    ((f0, f1),) = paired(before, after)
    args = _int_inputs(f0, seed, shift_amounts)
    want = interpret(f0, args)
    for got, what in ((interpret(f1, args), "interpreter"), (None, "LLVM JIT")):
        if got is None:
            jargs = _copy(args)
            jit.compile(after, opt_level=1)[f1.sym_name](*jargs)
            got = [a for a in jargs if isinstance(a, np.ndarray)]
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            np.testing.assert_array_equal(g, w, err_msg=f"{what} after {passes}: buffer {i}\n{text}")
    return want


BOOL_KERNEL = """tir.func @k(%A: memref<3x12xi1>, %B: memref<3x12xi1>, %X: memref<3x12xi64>, %C: memref<3x12xi1>,
                 %Y: memref<3x12xi64>) {
  %c0 = arith.constant 0 : i64
  tir.for %i = 0 to 3 parallel {
    tir.for %j = 0 to 12 vectorized {
      %a = tir.load %A[%i, %j] : i1
      %b = tir.load %B[%i, %j] : i1
      %c = arith.xori %a, %b : i1
      tir.store %c, %C[%i, %j] : i1
      %x = tir.load %X[%i, %j] : i64
      %y = arith.select %a, %x, %c0 : i64
      tir.store %y, %Y[%i, %j] : i64
    }
  }
}"""


@pytest.mark.parametrize("passes", ["tir-vectorize", "lower-tir"])
def test_vectorized_bool_loads_and_stores_are_bytes(passes):
    # a bool buffer holds one byte per element; an <N x i1> load or store in
    # LLVM is N packed bits, so vectorized Xor / Tril / comparisons read and
    # wrote the wrong bytes
    m = parse_module(BOOL_KERNEL)
    transform(m, passes)
    assert any(str(o.results[0].type) == "vector<12xi1>" for o in ops(m, "tir.load"))
    *_, c, y = _check_interp_and_jit(BOOL_KERNEL, passes, seed=5)
    a, b, x, _, _ = _int_inputs(parse_module(BOOL_KERNEL).body.first, 5)
    np.testing.assert_array_equal(c, a ^ b)
    np.testing.assert_array_equal(y, np.where(a, x, 0))


def _shift_kernel(op, dtype, kind):
    return f"""tir.func @s(%A: memref<4x8x{dtype}>, %N: memref<4x8x{dtype}>, %O: memref<4x8x{dtype}>) {{
  tir.for %i = 0 to 4 {{
    tir.for %j = 0 to 8{kind} {{
      %a = tir.load %A[%i, %j] : {dtype}
      %n = tir.load %N[%i, %j] : {dtype}
      %r = {op} %a, %n : {dtype}
      tir.store %r, %O[%i, %j] : {dtype}
    }}
  }}
}}"""


@pytest.mark.parametrize("op,np_op", [("arith.shli", np.left_shift), ("arith.shrsi", np.right_shift)])
@pytest.mark.parametrize("dtype", ["i8", "i32", "i64"])
@pytest.mark.parametrize("kind", ["", " vectorized"])
def test_shift_by_negative_or_too_wide_amounts(op, np_op, dtype, kind):
    # numpy (and relay's left_shift / right_shift) read the amount as
    # unsigned: one >= the width, a negative one included, gives 0 (left)
    # or the sign fill (right); LLVM's shl / ashr are poison there
    text = _shift_kernel(op, dtype, kind)
    _, _, out = _check_interp_and_jit(text, "tir-vectorize", seed=3, shift_amounts=True)
    a, n, _ = _int_inputs(parse_module(text).body.first, 3, shift_amounts=True)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, np_op(a, n))


_INT_OPS = ["arith.addi", "arith.subi", "arith.muli", "arith.andi", "arith.ori", "arith.xori", "arith.maxsi",
            "arith.minsi", "arith.shli", "arith.shrsi"]


@st.composite
def typed_elemwise(draw):
    """A two-deep elementwise nest on a random dtype (i1, i8 .. i64, f32):
    O = M ? op(A, B) : A, and a comparison of A and B stored as i1 -- the
    bool and integer loads, stores and selects vectorize and codegen see
    from relay's logical, comparison and where ops."""
    dtype = draw(st.sampled_from(["i1", "i8", "i16", "i32", "i64", "f32"]))
    rows, cols = draw(st.integers(1, 4)), draw(st.integers(1, 19))
    kind = draw(st.sampled_from(["", " vectorized", " vectorized", " unrolled"]))
    if dtype == "i1":
        op = draw(st.sampled_from(["arith.andi", "arith.ori", "arith.xori"]))
        cmp = "arith.xori %a, %b : i1"
    elif dtype == "f32":
        op = draw(st.sampled_from(["arith.addf", "arith.mulf", "arith.maximumf"]))
        cmp = "arith.cmpf " + draw(st.sampled_from(["olt", "oge", "une"])) + ", %a, %b : f32"
    else:
        op = draw(st.sampled_from(_INT_OPS))
        cmp = "arith.cmpi " + draw(st.sampled_from(["slt", "sge", "eq", "ne", "ult"])) + f", %a, %b : {dtype}"
    sh = f"{rows}x{cols}"
    return op, f"""tir.func @t(%A: memref<{sh}x{dtype}>, %B: memref<{sh}x{dtype}>, %M: memref<{sh}xi1>,
              %O: memref<{sh}x{dtype}>, %P: memref<{sh}xi1>) {{
  tir.for %i = 0 to {rows} {{
    tir.for %j = 0 to {cols}{kind} {{
      %a = tir.load %A[%i, %j] : {dtype}
      %b = tir.load %B[%i, %j] : {dtype}
      %m = tir.load %M[%i, %j] : i1
      %v = {op} %a, %b : {dtype}
      %r = arith.select %m, %v, %a : {dtype}
      tir.store %r, %O[%i, %j] : {dtype}
      %p = {cmp}
      tir.store %p, %P[%i, %j] : i1
    }}
  }}
}}"""


@settings(max_examples=300 if os.environ.get("TVMD_FUZZ") else 25, deadline=None)
@given(kernel=typed_elemwise(),
       order=st.lists(st.sampled_from(ORDERABLE + ["lower-tir"]), min_size=1, max_size=4),
       seed=st.integers(0, 1000))
def test_random_typed_kernels_interpreter_and_jit(kernel, order, seed):
    op, text = kernel
    _check_interp_and_jit(text, ",".join(order), seed, shift_amounts=op in ("arith.shli", "arith.shrsi"))
