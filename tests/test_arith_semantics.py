"""Every arith op means one thing (tvmd.dialects.arith.semantics): op by op,
on random operands, the te interpreter (whole-array computes and the loop
executor after --apply-schedule), the tir interpreter, the LLVM JIT and
tir-simplify's constant folding agree with that definition and with each
other.

One tir.func per (op, type) takes arrays of operands, and all of them are
JIT-compiled once in one module; hypothesis then only fills arrays.  Where
the definition says the result is undefined (integer division by zero or
INT_MIN / -1, index add/sub/mul overflow, fptosi/fptoui of NaN or out of
range) the operand pair is replaced by a defined one before running, with
the reason at `undefined` below: undefined operands are never compared, and
never run (a division by zero traps on x86).
"""

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tvmd.backend.llvm import jit
from tvmd.conversion.te_to_tir.apply_schedule import apply_to_func
from tvmd.dialects.arith import ops as A
from tvmd.dialects.arith import semantics as S
from tvmd.dialects.te.interpreter import run as run_te
from tvmd.dialects.tir.interpreter import Program
from tvmd.ir import types as T
from tvmd.ir.attributes import print_attr
from tvmd.ir.pass_manager import PassManager
from tvmd.ir.registry import get_pass_class
from tvmd.parser import parse_module

N = 32   # operand pairs per run
# fewer examples than the profile's default: each example runs every engine
# on N operand pairs, for each of ~220 (op, type) cases (TVMD_FUZZ=1 still
# gives 200 examples per case)
FEW = settings(max_examples=max(5, settings.default.max_examples // 10))

INT_TYPES = ["i1", "i8", "ui8", "i32", "i64", "index"]
FLOAT_TYPES = ["f32", "f64"]
INT_BINARY = ["addi", "subi", "muli", "divsi", "remsi", "floordivsi", "floormodsi", "maxsi", "minsi",
              "divui", "remui", "maxui", "minui", "shrui", "andi", "ori", "xori", "shli", "shrsi"]
FLOAT_BINARY = ["addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf", "powf"]
CMPI = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
CMPF = ["oeq", "one", "olt", "ole", "ogt", "oge", "ueq", "une", "ult", "ule", "ugt", "uge"]
CASTS = [
    ("index_cast", "i32", "index"), ("index_cast", "index", "i32"), ("index_cast", "i8", "index"),
    ("index_cast", "i1", "index"), ("index_cast", "ui8", "index"), ("index_cast", "index", "i8"),
    ("index_cast", "index", "i1"),
    ("extsi", "i8", "i32"), ("extsi", "i1", "i32"), ("extsi", "i32", "i64"), ("extsi", "ui8", "i32"),
    ("extui", "i8", "i32"), ("extui", "i1", "i8"), ("extui", "i32", "i64"),
    ("trunci", "i32", "i8"), ("trunci", "i64", "i32"), ("trunci", "i32", "i1"), ("trunci", "i64", "ui8"),
    ("sitofp", "i32", "f32"), ("sitofp", "i64", "f32"), ("sitofp", "i64", "f64"), ("sitofp", "i8", "f64"),
    ("sitofp", "i1", "f32"), ("sitofp", "ui8", "f32"),
    ("uitofp", "i32", "f32"), ("uitofp", "i64", "f64"), ("uitofp", "i8", "f32"), ("uitofp", "i32", "f64"),
    ("fptosi", "f32", "i32"), ("fptosi", "f64", "i64"), ("fptosi", "f32", "i8"), ("fptosi", "f64", "i32"),
    ("fptoui", "f32", "i32"), ("fptoui", "f64", "i64"), ("fptoui", "f32", "ui8"), ("fptoui", "f64", "i8"),
    ("extf", "f32", "f64"), ("truncf", "f64", "f32"),
]

# (function name, op text with %a %b, operand type, result type)
CASES = ([(f"{op}_{t}", f"arith.{op} %a, %b : {t}", t, t) for op in INT_BINARY for t in INT_TYPES]
         + [(f"{op}_{t}", f"arith.{op} %a, %b : {t}", t, t) for op in FLOAT_BINARY for t in FLOAT_TYPES]
         + [(f"negf_{t}", f"arith.negf %a : {t}", t, t) for t in FLOAT_TYPES]
         + [(f"cmpi_{p}_{t}", f"arith.cmpi {p}, %a, %b : {t}", t, "i1") for p in CMPI for t in INT_TYPES]
         + [(f"cmpf_{p}_{t}", f"arith.cmpf {p}, %a, %b : {t}", t, "i1") for p in CMPF for t in FLOAT_TYPES]
         + [(f"{op}_{s}_{d}", f"arith.{op} %a : {s} to {d}", s, d) for op, s, d in CASTS])
CASE = {c[0]: c for c in CASES}


def dtype(name):
    return np.dtype("int64") if name == "index" else T.to_numpy_dtype(T.parse_type(name))


def tir_text(name, body, t, rt):
    return f"""tir.func @{name}(%A: memref<{N}x{t}>, %B: memref<{N}x{t}>, %O: memref<{N}x{rt}>)
    attributes {{num_outputs = 1}} {{
  tir.for %i = 0 to {N} {{
    %a = tir.load %A[%i] : {t}
    %b = tir.load %B[%i] : {t}
    %r = {body}
    tir.store %r, %O[%i] : {rt}
  }}
}}
"""


def te_text(name, body, t, rt):
    return f"""te.func @{name}(%A: tensor<{N}x{t}>, %B: tensor<{N}x{t}>) -> tensor<{N}x{rt}> {{
  %O = te.compute [%i] : tensor<{N}x{rt}> {{
    %a = te.read %A[%i] : {t}
    %b = te.read %B[%i] : {t}
    %r = {body}
    yield %r
  }}
  return %O
}}
"""


@functools.lru_cache(maxsize=None)
def compiled():
    """All the cases as tir.funcs in one module, JIT-compiled once."""
    m = parse_module("".join(tir_text(*c) for c in CASES), "arith_semantics.tir")
    return m, jit.compile(m)


@functools.lru_cache(maxsize=None)
def engines(name):
    """name -> {engine: function(a, b) -> result array}."""
    m, lib = compiled()
    prog = Program(m.lookup(name))
    kernel = lib[name]
    te_plain = parse_module(te_text(*CASE[name])).body.first
    te_loops = parse_module(te_text(*CASE[name])).body.first
    apply_to_func(te_loops)
    rdt = dtype(CASE[name][3])

    def tir(a, b):
        o = np.zeros(N, rdt)
        prog(a, b, o)
        return o

    def llvm(a, b):
        o = np.zeros(N, rdt)
        kernel(a, b, o)
        return o

    return {"tir interpreter": tir, "llvm jit": llvm,
            "te interpreter": lambda a, b: run_te(te_plain, a, b)[0],
            "te loop executor": lambda a, b: run_te(te_loops, a, b)[0]}


# -- operands ---------------------------------------------------------------------------------------

def int_values(t):
    if t == "i1":
        return st.booleans()
    dt = dtype(t)
    info = np.iinfo(dt)
    edges = sorted({int(info.min), int(info.max), -1 if info.min < 0 else 1, 0, 1, 2})
    return st.one_of(st.sampled_from(edges), st.integers(-40, 40).filter(lambda v: info.min <= v <= info.max),
                     st.integers(int(info.min), int(info.max)))


def float_values(t):
    w = 32 if t == "f32" else 64
    return st.one_of(st.floats(width=w), st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, float("nan"),
                                                          float("inf"), -float("inf")]),
                     st.integers(-300, 300).map(float))


def values(t):
    return float_values(t) if t.startswith("f") else int_values(t)


def pairs(t):
    """A few operand pairs chosen by hypothesis (it shrinks these), and a
    seed for numpy to fill the rest of the N pairs (edges, small values,
    all bit patterns): one example tests N pairs at the cost of a few."""
    return st.tuples(st.lists(st.tuples(values(t), values(t)), min_size=1, max_size=6),
                     st.integers(0, 2 ** 32 - 1))


def random_values(rng, t, n):
    dt = dtype(t)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind == "f":
        bits = rng.integers(0, 1 << 62, n, dtype=np.int64, endpoint=True) * rng.choice([1, 2, 3], n)
        anybits = bits.astype(np.dtype(f"u{dt.itemsize}")).view(dt) if dt.itemsize == 8 else \
            (bits & 0xFFFFFFFF).astype(np.uint32).view(dt)
        small = rng.integers(-300, 300, n).astype(dt) / rng.choice([1, 2, 4, 3], n).astype(dt)
        edge = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 0.5], dt)[rng.integers(0, 8, n)]
        pick = rng.integers(0, 3, n)
        return np.where(pick == 0, anybits, np.where(pick == 1, small, edge))
    info = np.iinfo(dt)
    full = rng.integers(int(info.min), int(info.max), n, dtype=dt, endpoint=True)
    small = np.clip(rng.integers(-70, 70, n), int(info.min), int(info.max)).astype(dt)
    edge = np.array(sorted({int(info.min), int(info.max), 0, 1, min(int(info.max), 64)}
                           | ({-1} if info.min < 0 else set())), dt)
    edge = edge[rng.integers(0, len(edge), n)]
    pick = rng.integers(0, 3, n)
    return np.where(pick == 0, full, np.where(pick == 1, small, edge))


def as_arrays(drawn, t):
    ps, seed = drawn
    rng = np.random.default_rng(seed)
    dt = dtype(t)
    a = random_values(rng, t, N)
    b = random_values(rng, t, N)
    a[:len(ps)] = np.array([p[0] for p in ps]).astype(dt)
    b[:len(ps)] = np.array([p[1] for p in ps]).astype(dt)
    return a, b


def signed(x, t):
    """Python int value of the bits of x read as signed (i1 true is -1)."""
    w = 64 if t == "index" else int(t.lstrip("ui"))
    v = int(x) & ((1 << w) - 1)
    return v - (1 << w) if v >> (w - 1) else v


def undefined(name, a, b):
    """Which operand pairs have no defined result (see the semantics
    module's docstring): they are not run and not compared."""
    _, body, t, rt = CASE[name]
    op = body.split()[0].split(".")[1]
    bad = np.zeros(N, bool)
    for k in range(N):
        if op in ("divsi", "remsi", "floordivsi", "floormodsi"):
            # LLVM sdiv/srem: division by zero and INT_MIN / -1 are UB (they trap on x86)
            w = 64 if t == "index" else int(t.lstrip("ui"))
            x, y = signed(a[k], t), signed(b[k], t)
            bad[k] = y == 0 or (x == -(1 << (w - 1)) and y == -1)
        elif op in ("divui", "remui"):
            bad[k] = int(b[k]) == 0   # LLVM udiv/urem by zero is UB
        elif t == "index" and op in ("addi", "subi", "muli"):
            # index arithmetic carries nsw: an overflow is poison
            x, y = int(a[k]), int(b[k])
            r = x + y if op == "addi" else x - y if op == "subi" else x * y
            bad[k] = not -(1 << 63) <= r < (1 << 63)
        elif op in ("fptosi", "fptoui"):
            # NaN or a value outside the destination's range is poison
            v = float(a[k])
            w = 64 if rt == "index" else int(rt.lstrip("ui"))
            lo, hi = (0, 1 << w) if op == "fptoui" else (-(1 << (w - 1)), 1 << (w - 1))
            bad[k] = not (np.isfinite(v) and lo <= int(np.trunc(v)) < hi)
    return bad


def sanitize(name, a, b):
    """(a, b, defined mask): undefined pairs replaced by the first defined
    one (or ones)."""
    bad = undefined(name, a, b)
    if bad.any():
        a, b = a.copy(), b.copy()
        good = np.flatnonzero(~bad)
        a[bad] = a[good[0]] if good.size else 1
        b[bad] = b[good[0]] if good.size else 1
    return a, b, ~bad


# -- the reference: the semantics table ----------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def the_op(name):
    m, _ = compiled()
    return next(o for o in m.lookup(name).walk() if isinstance(o, A.ArithOp))


def reference(name, a, b):
    rt = CASE[name][3]
    op = the_op(name)
    with np.errstate(all="ignore"):
        if isinstance(op, A.CastOp) or isinstance(op, A.NegFOp):
            r = op.evaluate(a)
        else:
            r = op.evaluate(a, b)
    return np.asarray(r).astype(dtype(rt)), op


def same(got, want):
    """Bitwise-equal results, NaN equal to NaN (any payload), -0.0 != +0.0."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype.kind == "f":
        nan = np.isnan(got) & np.isnan(want)
        return nan | ((got == want) & (np.signbit(got) == np.signbit(want)))
    return got == want


def check(name, ps):
    t = CASE[name][2]
    a, b = as_arrays(ps, t)
    a, b, ok = sanitize(name, a, b)
    want, op = reference(name, a, b)
    if t == "index" and op.INDEX_EVAL is not None:
        # the Python-int form agrees with the array form
        idx = np.array([op.INDEX_EVAL(int(x), int(y)) if k else 0 for x, y, k in zip(a, b, ok)], dtype=object)
        assert all(int(i) == int(w) for i, w, k in zip(idx, want, ok) if k), name
    for engine, fn in engines(name).items():
        got = fn(a.copy(), b.copy())
        eq = same(got, want) | ~ok
        if name.startswith("powf"):
            # libm's pow (and LLVM's pow(x, 0.5) -> sqrt) are not correctly
            # rounded alike: one unit in the last place apart is agreement
            g, w = np.asarray(got), np.asarray(want)
            eq |= np.isfinite(w) & (np.abs(g - w) <= np.spacing(np.abs(w).astype(w.dtype)))
            # pow(NaN, 0): C says 1; for a signalling NaN glibc's scalar powf
            # gives NaN and its vector powf (what LLVM vectorises to on AVX2) 1
            eq |= np.isnan(a) & (b == 0) & ((g == 1) | np.isnan(g))
        if not eq.all():
            k = int(np.flatnonzero(~eq)[0])
            raise AssertionError(f"{name} in the {engine}: on ({a[k]!r}, {b[k]!r}) gives {got[k]!r}, "
                                 f"the semantics say {want[k]!r}")


INT_CASES = [c[0] for c in CASES if c[2] in INT_TYPES]
FLOAT_CASES = [c[0] for c in CASES if c[2] in FLOAT_TYPES]


@pytest.mark.parametrize("name", INT_CASES)
@FEW
@given(data=st.data())
def test_integer_ops_agree(name, data):
    check(name, data.draw(pairs(CASE[name][2])))


@pytest.mark.parametrize("name", FLOAT_CASES)
@FEW
@given(data=st.data())
def test_float_ops_agree(name, data):
    check(name, data.draw(pairs(CASE[name][2])))


# -- constant folding ---------------------------------------------------------------------------------------

def const_text(v, t):
    if t == "i1":
        return "true" if v else "false"
    if t.startswith("f"):
        return print_attr(float(v))
    return str(int(v))


def folded(name, a, b):
    """The results of tir-simplify on a function computing the op on
    constants (each result stored to O)."""
    _, body, t, rt = CASE[name]
    lines = []
    for k in range(N):
        lines += [f"    %a{k} = arith.constant {const_text(a[k], t)} : {t}",
                  f"    %b{k} = arith.constant {const_text(b[k], t)} : {t}",
                  f"    %c{k} = arith.constant {k} : index",
                  f"    %r{k} = " + body.replace("%a", f"%a{k}").replace("%b", f"%b{k}"),
                  f"    tir.store %r{k}, %O[%c{k}] : {rt}"]
    text = (f"tir.func @{name}(%O: memref<{N}x{rt}>) attributes {{num_outputs = 1}} {{\n"
            + "\n".join(lines) + "\n}\n")
    m = parse_module(text)
    PassManager([(None, get_pass_class("tir-simplify")())]).run(m)
    f = m.body.first
    left = [o.name for o in f.walk() if isinstance(o, A.ArithOp) and not isinstance(o, A.ConstantOp)]
    assert not left, f"{name}: tir-simplify did not fold {left[:3]}"
    o = np.zeros(N, dtype(rt))
    Program(f)(o)
    return o


@settings(max_examples=max(20, settings.default.max_examples))
@given(data=st.data())
def test_constant_folding_agrees(data):
    name = data.draw(st.sampled_from([c[0] for c in CASES]))
    t = CASE[name][2]
    a, b = as_arrays(data.draw(pairs(t)), t)
    a, b, ok = sanitize(name, a, b)
    want, _ = reference(name, a, b)
    got = folded(name, a, b)
    eq = same(got, want) | ~ok
    assert eq.all(), (name, a[~eq], b[~eq], got[~eq], want[~eq])


def fold_one(text):
    m = parse_module(text)
    PassManager([(None, get_pass_class("tir-simplify")())]).run(m)
    return [o.name for o in m.body.first.walk() if isinstance(o, A.ArithOp) and not isinstance(o, A.ConstantOp)]


@pytest.mark.parametrize("op,t,x,y", [
    ("divsi", "i32", 7, 0), ("floordivsi", "index", 7, 0), ("remsi", "i8", -128, -1),
    ("floormodsi", "index", -(1 << 63), -1), ("addi", "index", (1 << 63) - 1, 1), ("muli", "index", 1 << 40, 1 << 40),
])
def test_undefined_operations_are_not_folded(op, t, x, y):
    text = f"""tir.func @f(%O: memref<1x{t}>) attributes {{num_outputs = 1}} {{
    %a = arith.constant {x} : {t}
    %b = arith.constant {y} : {t}
    %c = arith.constant 0 : index
    %r = arith.{op} %a, %b : {t}
    tir.store %r, %O[%c] : {t}
}}
"""
    assert fold_one(text) == [f"arith.{op}"]


# -- spot checks against plain arithmetic ---------------------------------------------------------------------

def test_te_index_and_or_after_schedule():
    """Regression: the te loop executor ran index andi/ori as Python's
    `and`/`or` (A[(i + 2) & 3] gave [40 40 40 40])."""
    src = """te.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute [%i] : tensor<4xf32> {
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c1 = arith.constant 1 : index
    %s = arith.addi %i, %c2 : index
    %k = arith.andi %s, %c3 : index
    %o = arith.ori %k, %c1 : index
    %x = arith.xori %o, %c1 : index
    %a = te.read %A[%x] : f32
    yield %a
  }
  return %B
}
"""
    A_ = np.array([10, 20, 30, 40], np.float32)
    f = parse_module(src).body.first
    want = A_[(((np.arange(4) + 2) & 3) | 1) ^ 1]   # [30 30 10 10]
    np.testing.assert_array_equal(run_te(f, A_)[0], want)
    apply_to_func(f)
    np.testing.assert_array_equal(run_te(f, A_)[0], want)
    PassManager([(None, get_pass_class("lower-te-to-tir")())]).run(m := parse_module(src))
    o = np.zeros(4, np.float32)
    Program(m.body.first)(A_, o)
    np.testing.assert_array_equal(o, want)


def test_rules_on_python_ints():
    sem = S.BINARY
    assert sem["arith.divsi"].index(-7, 2) == -3 and sem["arith.remsi"].index(-7, 2) == -1
    assert sem["arith.floordivsi"].index(-7, 2) == -4 and sem["arith.floormodsi"].index(-7, 2) == 1
    assert sem["arith.shli"].index(1, 63) == -(1 << 63) and sem["arith.shli"].index(1, 64) == 0
    assert sem["arith.shli"].index(3, -1) == 0 and sem["arith.shrsi"].index(-5, -1) == -1
    assert sem["arith.shrsi"].index(5, 64) == 0 and sem["arith.shrsi"].index(-8, 2) == -2
    i64 = np.int64
    assert sem["arith.divsi"](i64(-(1 << 63)), i64(3)) == -3074457345618258602   # no abs() overflow
    assert S.INDEX_CMP["ult"](-1, 0) is False and S.INDEX_CMP["ugt"](-1, 0) is True
    assert bool(sem["arith.addi"](np.bool_(True), np.bool_(True))) is False   # i1 add is xor
    assert int(sem["arith.maxsi"](np.uint8(200), np.uint8(1))) == 1            # ui8 200 is -56 here
    assert int(sem["arith.maxui"](np.int8(-56), np.int8(1))) == -56            # i8 -56 is 200 here
    assert int(sem["arith.divui"](np.int8(-2), np.int8(2))) == 127 and bool(sem["arith.minui"](True, False)) is False
    assert np.signbit(sem["arith.maximumf"](np.float32(-0.0), np.float32(0.0))) == False  # noqa: E712
    assert np.signbit(sem["arith.minimumf"](np.float32(0.0), np.float32(-0.0))) == True  # noqa: E712


def test_class_names_match_their_variables():
    for var, cls in vars(A).items():
        if isinstance(cls, type) and issubclass(cls, A.ArithOp) and cls.__module__ == A.__name__:
            assert cls.__name__ == var and cls.__qualname__ == var, (var, cls.__name__)
