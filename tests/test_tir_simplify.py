"""tir-simplify: what it removes, and that it never changes what a function computes."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tvmd.dialects.tir.interpreter import run
from tvmd.dialects.tir.passes.simplify import Simplify
from tvmd.ir.pass_manager import PassContext
from tvmd.ir.printer import print_module
from tvmd.ir.verifier import verify
from tvmd.parser import parse_module

KERNELS = os.path.join(os.path.dirname(__file__), "tir_kernels")


def simplify(text):
    m = parse_module(text)
    ctx = PassContext()
    Simplify().run(m, ctx)
    verify(m)
    return m, ctx.stats.get("tir-simplify", {})


def ops(m, name):
    return [o for o in m.walk() if o.name == name]


def test_split_tail_guard_disappears_when_in_range():
    m, stats = simplify("""
tir.func @f(%A: memref<96xf32>, %B: memref<96xf32>) {
  tir.for %o = 0 to 6 {
    tir.for %i = 0 to 16 {
      %c16 = arith.constant 16 : index
      %n = arith.constant 96 : index
      %b = arith.muli %o, %c16 : index
      %x = arith.addi %b, %i : index
      %ok = arith.cmpi slt, %x, %n : index
      tir.if %ok {
        %v = tir.load %A[%x] : f32
        tir.store %v, %B[%x] : f32
      }
    }
  }
}""")
    assert not ops(m, "tir.if") and not ops(m, "arith.cmpi")
    assert stats["ifs-decided"] == 1


def test_split_tail_guard_stays_when_needed():
    m, _ = simplify("""
tir.func @f(%A: memref<100xf32>, %B: memref<100xf32>) {
  tir.for %o = 0 to 7 {
    tir.for %i = 0 to 16 {
      %c16 = arith.constant 16 : index
      %n = arith.constant 100 : index
      %b = arith.muli %o, %c16 : index
      %x = arith.addi %b, %i : index
      %ok = arith.cmpi slt, %x, %n : index
      tir.if %ok {
        %v = tir.load %A[%x] : f32
        tir.store %v, %B[%x] : f32
      }
    }
  }
}""")
    assert len(ops(m, "tir.if")) == 1


def test_fused_index_division_disappears():
    """(o*8 + i) floordiv 8 -> o and (o*8 + i) floormod 8 -> i, for i in [0, 8)."""
    m, _ = simplify("""
tir.func @f(%A: memref<4x8xf32>, %B: memref<32xf32>) {
  tir.for %o = 0 to 4 {
    tir.for %i = 0 to 8 {
      %c8 = arith.constant 8 : index
      %b = arith.muli %o, %c8 : index
      %f = arith.addi %b, %i : index
      %r = arith.floordivsi %f, %c8 : index
      %c = arith.floormodsi %f, %c8 : index
      %v = tir.load %A[%r, %c] : f32
      tir.store %v, %B[%f] : f32
    }
  }
}""")
    assert not ops(m, "arith.floordivsi") and not ops(m, "arith.floormodsi")
    load = ops(m, "tir.load")[0]
    o_iv, i_iv = [op.induction_var for op in ops(m, "tir.for")]
    assert load.operands[1] is o_iv and load.operands[2] is i_iv


def test_constant_folding_and_identities():
    m, stats = simplify("""
tir.func @f(%A: memref<64xf32>, %B: memref<64xf32>, %n: index) {
  tir.for %i = 0 to 64 {
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %six = arith.muli %c2, %c3 : index
    %z = arith.subi %six, %six : index
    %x0 = arith.addi %i, %z : index
    %x1 = arith.muli %x0, %c1 : index
    %x2 = arith.floordivsi %x1, %c1 : index
    %m = arith.floormodsi %n, %c1 : index
    %x3 = arith.addi %x2, %m : index
    %nn = arith.subi %n, %n : index
    %x4 = arith.addi %x3, %nn : index
    %v = tir.load %A[%x4] : f32
    %one = arith.constant 1.0 : f32
    %w = arith.mulf %v, %one : f32
    %f1 = arith.constant 1.5 : f32
    %f2 = arith.constant 2.0 : f32
    %f3 = arith.mulf %f1, %f2 : f32
    %e = tir.intrin "exp"(%f3) : f32
    %r = arith.addf %w, %e : f32
    tir.store %r, %B[%x4] : f32
  }
}""")
    text = print_module(m)
    assert "arith.muli" not in text and "arith.subi" not in text and "floordivsi" not in text
    assert "tir.load %A[%i]" in text and "tir.store %r, %B[%i]" in text
    assert "arith.mulf" not in text and "tir.intrin" not in text
    assert "arith.constant 20.085536" in text    # exp(3.0) in f32
    assert stats["constants-folded"] >= 3


def test_nested_constant_adds():
    m, _ = simplify("""
tir.func @f(%A: memref<64xf32>, %B: memref<64xf32>) {
  tir.for %i = 0 to 32 {
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %c2 = arith.constant 2 : index
    %a = arith.addi %i, %c3 : index
    %b = arith.addi %c5, %a : index
    %c = arith.subi %b, %c2 : index
    %v = tir.load %A[%c] : f32
    tir.store %v, %B[%i] : f32
  }
}""")
    adds = ops(m, "arith.addi")
    assert len(adds) == 1 and adds[0].operands[1].defining_op().attributes["value"] == 6


def test_loops_of_extent_zero_and_one():
    m, stats = simplify("""
tir.func @f(%A: memref<8xf32>, %B: memref<8xf32>) {
  tir.for %i = 0 to 0 {
    %v = tir.load %A[%i] : f32
    tir.store %v, %B[%i] : f32
  }
  tir.for %i = 5 to 6 parallel {
    %v = tir.load %A[%i] : f32
    tir.store %v, %B[%i] : f32
  }
  tir.for %i = 0 to 8 {
    %v = tir.load %A[%i] : f32
  }
  %T = tir.alloc : memref<4xf32>
}""")
    assert not ops(m, "tir.for") and not ops(m, "tir.alloc")
    assert len(ops(m, "tir.store")) == 1
    st_op = ops(m, "tir.store")[0]
    assert st_op.operands[2].defining_op().attributes["value"] == 5
    assert stats["loops-removed"] == 2 and stats["loops-inlined"] == 1


def test_thread_loop_of_extent_one_is_kept():
    m, _ = simplify("""
tir.func @f(%A: memref<8xf32>) {
  tir.for %t = 0 to 1 thread("threadIdx.x") {
    %z = arith.constant 0.0 : f32
    tir.store %z, %A[%t] : f32
  }
}""")
    assert len(ops(m, "tir.for")) == 1


def test_float_identities_only_when_exact():
    m, _ = simplify("""
tir.func @f(%A: memref<4xf32>, %B: memref<4xf32>) {
  tir.for %i = 0 to 4 {
    %v = tir.load %A[%i] : f32
    %z = arith.constant 0.0 : f32
    %s = arith.addf %v, %z : f32
    tir.store %s, %B[%i] : f32
  }
}""")
    assert len(ops(m, "arith.addf")) == 1    # -0.0 + 0.0 is +0.0: not an identity


def test_divide_by_zero_is_not_folded():
    m, _ = simplify("""
tir.func @f(%A: memref<4xindex>) {
  %a = arith.constant 7 : index
  %z = arith.constant 0 : index
  %q = arith.floordivsi %a, %z : index
  tir.store %q, %A[%z] : index
}""")
    assert len(ops(m, "arith.floordivsi")) == 1


def test_narrow_integers_wrap():
    m, _ = simplify("""
tir.func @f(%A: memref<1xi8>) {
  %a = arith.constant 100 : i8
  %b = arith.constant 100 : i8
  %s = arith.addi %a, %b : i8
  %z = arith.constant 0 : index
  tir.store %s, %A[%z] : i8
}""")
    assert [o.attributes["value"] for o in ops(m, "arith.constant") if str(o.results[0].type) == "i8"] == [-56]


@pytest.mark.parametrize("file", sorted(f for f in os.listdir(KERNELS) if f.endswith(".tir")))
def test_kernels_keep_their_results(file):
    """Every hand-written kernel computes the same before and after."""
    with open(os.path.join(KERNELS, file)) as f:
        text = f.read()
    before = parse_module(text)
    after, _ = simplify(text)
    rng = np.random.default_rng(3)
    names = [f.sym_name for f in ops(before, "tir.func")]
    assert names and [f.sym_name for f in ops(after, "tir.func")] == names   # none dropped, added or renamed
    for f0, f1 in zip(ops(before, "tir.func"), ops(after, "tir.func"), strict=True):
        args0, args1 = [], []
        for a in f0.args:
            t = a.type
            if hasattr(t, "shape"):
                shape = [d if d is not None else 12 for d in t.shape]
                x = rng.uniform(0.1, 2, shape).astype(t.dtype) if t.dtype.kind == "f" else \
                    rng.integers(1, 5, shape).astype(t.dtype)
            else:
                x = 12 if str(t) == "index" else np.float32(0.5)
            args0.append(x.copy() if hasattr(x, "copy") else x)
            args1.append(x.copy() if hasattr(x, "copy") else x)
        run(f0, *args0)
        run(f1, *args1)
        for x, y in zip(args0, args1, strict=True):
            np.testing.assert_array_equal(x, y)


# -- hypothesis: random index expressions over random loop nests -------------------

class _Gen:
    """Emits tir text for a random index expression, one SSA line at a time."""

    def __init__(self, draw):
        self.draw = draw
        self.lines = []
        self.n = 0

    def new(self, text):
        self.n += 1
        name = f"%e{self.n}"
        self.lines.append(f"{name} = {text}")
        return name

    def const(self, v):
        return self.new(f"arith.constant {v} : index")

    def expr(self, leaves, depth):
        d = self.draw
        if depth == 0 or d(st.integers(0, 3)) == 0:
            if d(st.booleans()):
                return d(st.sampled_from(leaves))
            return self.const(d(st.integers(-6, 12)))
        kind = d(st.sampled_from(["addi", "subi", "muli", "muli_c", "floordivsi", "floormodsi", "divsi",
                                  "remsi", "maxsi", "minsi", "select"]))
        a = self.expr(leaves, depth - 1)
        if kind in ("floordivsi", "floormodsi", "divsi", "remsi", "muli_c"):
            c = self.const(d(st.integers(1, 9)))
            op = "muli" if kind == "muli_c" else kind
            return self.new(f"arith.{op} {a}, {c} : index")
        b = self.expr(leaves, depth - 1)
        if kind == "select":
            pred = d(st.sampled_from(["slt", "sle", "sgt", "sge", "eq", "ne", "ult"]))
            p = self.new(f"arith.cmpi {pred}, {a}, {b} : index")
            return self.new(f"arith.select {p}, {a}, {b} : index")
        return self.new(f"arith.{kind} {a}, {b} : index")


@st.composite
def programs(draw):
    e1, e2 = draw(st.integers(1, 5)), draw(st.integers(0, 4))
    lo2 = draw(st.integers(0, 2))
    g = _Gen(draw)
    value = g.expr(["%i", "%j", "%n"], 3)
    guard = g.expr(["%i", "%j"], 2)
    bound = g.const(draw(st.integers(-3, 10)))
    pred = draw(st.sampled_from(["slt", "sle", "sge", "ne"]))
    body = "\n      ".join(g.lines)
    text = f"""
tir.func @f(%O: memref<5x8xi64>, %n: index) {{
  tir.for %i = 0 to {e1} {{
    tir.for %j = {lo2} to {lo2 + e2} {{
      {body}
      %p = arith.cmpi {pred}, {guard}, {bound} : index
      tir.if %p {{
        %v = arith.index_cast {value} : index to i64
        %jj = arith.subi %j, %c_lo : index
        tir.store %v, %O[%i, %jj] : i64
      }} else {{
        %m = arith.constant -1 : i64
        %jj = arith.subi %j, %c_lo : index
        tir.store %m, %O[%i, %jj] : i64
      }}
    }}
  }}
}}"""
    return text.replace("%c_lo", f"%c_lo_{lo2}").replace(
        f"tir.for %i = 0 to {e1} {{", f"%c_lo_{lo2} = arith.constant {lo2} : index\n  tir.for %i = 0 to {e1} {{", 1)


def _run(text_or_module, n):
    m = parse_module(text_or_module) if isinstance(text_or_module, str) else text_or_module
    out = np.full((5, 8), 99, np.int64)
    try:
        run(m.body.first, out, n)
    except Exception as e:   # division by zero: both sides must fail alike
        return type(e).__name__
    return out


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])   # examples: the conftest profile
@given(programs(), st.integers(-3, 9))
def test_simplify_preserves_random_index_programs(text, n):
    before = _run(text, n)
    m, _ = simplify(text)
    after = _run(m, n)
    if isinstance(before, str):
        # a division by zero may be folded away (a dead guard), never introduced
        return
    assert not isinstance(after, str), print_module(m)
    np.testing.assert_array_equal(before, after, err_msg=text + "\n---\n" + print_module(m))


@settings(deadline=None)
@given(st.integers(1, 9), st.integers(-20, 20), st.integers(-5, 5), st.integers(1, 12))
def test_floordiv_pull_out(c, k, off, extent):
    """(i*c*k + j + off) floordiv/floormod c over a loop nest, before vs after."""
    text = f"""
tir.func @f(%O: memref<12x12xi64>, %n: index) {{
  tir.for %i = 0 to {extent} {{
    tir.for %j = 0 to {extent} {{
      %c = arith.constant {c} : index
      %ck = arith.constant {c * k} : index
      %off = arith.constant {off} : index
      %a = arith.muli %i, %ck : index
      %b = arith.addi %a, %j : index
      %x = arith.addi %b, %off : index
      %q = arith.floordivsi %x, %c : index
      %r = arith.floormodsi %x, %c : index
      %s = arith.muli %q, %c : index
      %t = arith.addi %s, %r : index
      %u = arith.addi %t, %q : index
      %v = arith.index_cast %u : index to i64
      tir.store %v, %O[%i, %j] : i64
    }}
  }}
}}"""
    out0, out1 = np.zeros((12, 12), np.int64), np.zeros((12, 12), np.int64)
    run(parse_module(text).body.first, out0, 0)
    m, _ = simplify(text)
    run(m.body.first, out1, 0)
    np.testing.assert_array_equal(out0, out1)


@settings(max_examples=max(settings.default.max_examples // 2, 10), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])   # half the profile's: each example compiles
@given(programs(), st.integers(-3, 9))
def test_llvm_matches_interpreter_on_random_programs(text, n):
    """The same random programs, compiled (before and after simplify): the
    codegen's integer semantics (floordiv, select, unsigned compares, ...)
    against the interpreter's."""
    from tvmd.backend.llvm import jit
    want = _run(text, n)
    if isinstance(want, str):
        return   # division by zero: undefined behaviour in compiled code
    for m in (parse_module(text), simplify(text)[0]):
        out = np.full((5, 8), 99, np.int64)
        jit.compile(m, opt_level=1).f(out, n)
        np.testing.assert_array_equal(out, want, err_msg=text)


def test_folding_unsigned_and_unordered_compares():
    """Folding goes through arith's evaluators: ult on -1 is unsigned, and
    the unordered float predicates are true on NaN (both once wrong in arith)."""
    m, _ = simplify("""
tir.func @f(%O: memref<2xi8>) {
  %a = arith.constant 0 : index
  %b = arith.constant -1 : index
  %u = arith.cmpi ult, %a, %b : index
  %nan = arith.constant nan : f32
  %one = arith.constant 1.0 : f32
  %f = arith.cmpf ult, %nan, %one : f32
  %u8 = arith.extui %u : i1 to i8
  %f8 = arith.extui %f : i1 to i8
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tir.store %u8, %O[%c0] : i8
  tir.store %f8, %O[%c1] : i8
}""")
    assert not ops(m, "arith.cmpi") and not ops(m, "arith.cmpf")
    o = np.zeros(2, np.int8)
    run(m.body.first, o)
    assert list(o) == [1, 1]
