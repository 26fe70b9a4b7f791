"""Stage ops (cache_read, cache_write, rfactor), storage ops (set_scope,
storage_align, double_buffer), argmax/argmin and user reducers: the loops
and buffers they make, and numbers checked against numpy through the te
interpreter, the TIR interpreter and the LLVM JIT."""

import numpy as np
import pytest

from tvmd.conversion.te_to_tir.apply_schedule import apply_to_func
from tvmd.dialects.te.interpreter import run
from tvmd.dialects.tir.interpreter import run as run_tir
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.ir.pass_manager import PassManager
from tvmd.ir.printer import print_module
from tvmd.ir.registry import get_pass_class
from tvmd.ir.verifier import verify
from tvmd.parser import parse_module

RNG = np.random.default_rng(5)

MATMUL = """te.func @mm(%A: tensor<6x8xf32>, %B: tensor<8x10xf32>) -> tensor<6x10xf32> {
  %C = te.compute [%i, %j] reduce [%k: 8] "sum" : tensor<6x10xf32> {
    %a = te.read %A[%i, %k] : f32
    %b = te.read %B[%k, %j] : f32
    %m = arith.mulf %a, %b : f32
    yield %m
  }
SCHEDULE
  return %C
}
"""

ROWSUM = """te.func @s(%A: tensor<4x10xf32>) -> tensor<4xf32> {
  %C = te.compute [%i] reduce [%k: 10] "sum" : tensor<4xf32> {
    %a = te.read %A[%i, %k] : f32
    yield %a
  }
SCHEDULE
  return %C
}
"""


def args_for(f):
    return [RNG.standard_normal(a.type.shape).astype(np.float32) for a in f.body.args]


def lower_and_run(text, args):
    """Lower to TIR, check the text round trips, run on the TIR interpreter."""
    m = parse_module(text, "k.te")
    PassManager([(None, get_pass_class("lower-te-to-tir")())]).run(m)
    verify(m)
    printed = print_module(m)
    assert print_module(parse_module(printed)) == printed
    f = [op for op in m.body.ops if op.name == "tir.func"][-1]   # the lowered te.func (after any extern kernel)
    outs = [np.full(o.type.shape, 0, o.type.dtype) for o in f.body.args[len(args):]]
    run_tir(f, *args, *outs)
    return m, printed, outs


def schedule(text, want, args=None):
    """Apply the schedule; the te interpreter before and after, and the TIR
    interpreter after lowering, all give `want` (numpy's numbers)."""
    m = parse_module(text, "s.te")
    f = next(op for op in m.body.ops if op.name == "te.func")
    args = args if args is not None else args_for(f)
    w = want(*args)
    w = w if isinstance(w, tuple) else (w,)
    for g, x in zip(run(f, *args), w, strict=True):
        np.testing.assert_allclose(g, x, rtol=1e-5, atol=1e-5)
    apply_to_func(f)
    verify(m)
    printed = print_module(m)
    assert print_module(parse_module(printed)) == printed
    for g, x in zip(run(f, *args), w, strict=True):
        np.testing.assert_allclose(g, x, rtol=1e-5, atol=1e-5)
    _, tir_text, outs = lower_and_run(text, args)
    for g, x in zip(outs, w, strict=True):
        np.testing.assert_allclose(g, x, rtol=1e-5, atol=1e-5)
    return printed, tir_text


def mm(a, b):
    return a @ b


# -- cache_read / cache_write / set_scope --------------------------------------------

def test_cache_read_and_write_with_scopes():
    text, tir = schedule(MATMUL.replace("SCHEDULE", """
  %AS = te.cache_read %A, %C {scope = "shared"} : tensor<6x8xf32>
  %CL = te.cache_write %C {scope = "local"} : tensor<6x10xf32>
  %i, %j = te.axes %C
  %jo, %ji = te.split %j {factor = 5}
  te.compute_at %CL, %jo
  %ci, %cj, %ck = te.axes %CL
  te.unroll %ck"""), mm)
    assert '%AS = te.realize {scope = "shared"} : tensor<6x8xf32>' in text
    assert '%CL = te.realize {scope = "local"} : tensor<1x5xf32>' in text   # the tile computed at %jo
    assert "te.read %AS[" in text and "te.read %A[" in text
    assert 'memref<6x8xf32, "shared">' in tir and 'memref<1x5xf32, "local">' in tir


def test_compute_at_an_outer_loop_of_the_readers_consumer():
    """A cache_read whose reader (the cache_write tile) is computed at the
    row loop, itself computed at the column loop outside it: one panel of B
    per column block, read by every row tile inside (ragged rows: 6 by 4)."""
    sched = """
  %BS = te.cache_read %B, %C {scope = "global"} : tensor<8x10xf32>
  %CL = te.cache_write %C {scope = "local"} : tensor<6x10xf32>
  %i, %j = te.axes %C
  %jo, %ji = te.split %j {factor = 5}
  %io, %ii = te.split %i {factor = 4}
  te.reorder %jo, %io, %ii, %ji
  te.compute_at %CL, %io
  te.compute_at %BS, %jo"""
    text, tir = schedule(MATMUL.replace("SCHEDULE", sched), mm)
    assert "%BS = te.realize : tensor<8x5xf32>" in text
    assert tir.index("%BS = tir.alloc") < tir.index("tir.for %i.outer")
    # at the reader's own loop (beside it, computed first): the panel per row tile
    text, tir = schedule(MATMUL.replace("SCHEDULE", sched.replace("te.compute_at %BS, %jo", "te.compute_at %BS, %io")),
                         mm)
    assert "%BS = te.realize : tensor<8x5xf32>" in text
    assert tir.index("tir.for %i.outer") < tir.index("%BS = tir.alloc") < tir.index("%CL = tir.alloc")
    # inside the loop the reader is computed at: not every read of it is done there
    m = parse_module(MATMUL.replace("SCHEDULE", sched.replace("te.compute_at %BS, %jo", "te.compute_at %BS, %ii")))
    with pytest.raises(DiagnosticError, match="axis 'i.inner' belongs to 'C', which does not read 'BS' "
                                              r"\(nor computes a reader of it at a loop inside 'i.inner'\)"):
        apply_to_func(next(op for op in m.body.ops if op.name == "te.func"))


def test_cache_read_for_some_readers_only():
    text = """te.func @f(%A: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %B = te.compute [%i] : tensor<8xf32> {
    %a = te.read %A[%i] : f32
    %e = te.intrin "exp"(%a) : f32
    yield %e
  }
  %C = te.compute [%i] : tensor<8xf32> {
    %a = te.read %A[%i] : f32
    %s = arith.addf %a, %a : f32
    yield %s
  }
  %AL = te.cache_read %A, %C {scope = "local"} : tensor<8xf32>
  return %B, %C
}"""
    out, _ = schedule(text, lambda a: (np.exp(a), a + a))
    assert out.count("te.read %A[") == 2 and out.count("te.read %AL[") == 1


def test_set_scope():
    text = MATMUL.replace("  return %C", """  %R = te.compute [%i, %j] : tensor<6x10xf32> {
    %c = te.read %C[%i, %j] : f32
    %t = te.intrin "tanh"(%c) : f32
    yield %t
  }
  return %R""").replace("SCHEDULE", '  te.set_scope %C {scope = "shared"}')
    out, tir = schedule(text, lambda a, b: np.tanh(a @ b))
    assert '%C = te.realize {scope = "shared"}' in out and 'memref<6x10xf32, "shared">' in tir


# -- rfactor ---------------------------------------------------------------------------

@pytest.mark.parametrize("sched, cf_type", [
    ("%ko, %ki = te.split %k {factor = 4}\n  %CF = te.rfactor %C, %ki", "tensor<4x4xf32>"),
    ("%ko, %ki = te.split %k {factor = 4}\n  %CF = te.rfactor %C, %ko {factor_axis = 1}", "tensor<4x3xf32>"),
    ("%CF = te.rfactor %C, %k {factor_axis = 1}", "tensor<4x10xf32>"),
    ("%ko, %ki = te.split %k {nparts = 3}\n  %CF = te.rfactor %C, %ki", "tensor<4x4xf32>"),
])
def test_rfactor_row_sum(sched, cf_type):
    text = ROWSUM.replace("SCHEDULE", f"""  %i, %k = te.axes %C
  {sched} : {cf_type}
  %x = te.axes %CF
  %i2, %r = te.axes %C
  te.unroll %r""").replace("%x = te.axes %CF", "%x:" + ("3" if "split" in sched else "2") + " = te.axes %CF")
    out, _ = schedule(text, lambda a: a.sum(1))
    assert f"%CF = te.realize : {cf_type}" in out


def test_rfactor_then_vectorize_the_factored_axis():
    text = ROWSUM.replace("SCHEDULE", """  %i, %k = te.axes %C
  %ko, %ki = te.split %k {factor = 4}
  %CF = te.rfactor %C, %ki : tensor<4x4xf32>
  %f, %fi, %fo = te.axes %CF
  te.reorder %fi, %fo, %f
  te.vectorize %f""")
    out, _ = schedule(text, lambda a: a.sum(1))
    assert "vectorized" in out


def test_rfactor_max_two_reduce_axes():
    text = """te.func @m(%A: tensor<3x4x5xf32>) -> tensor<3xf32> {
  %C = te.compute [%i] reduce [%k: 4, %l: 5] "max" : tensor<3xf32> {
    %a = te.read %A[%i, %k, %l] : f32
    yield %a
  }
  %i, %k, %l = te.axes %C
  %CF = te.rfactor %C, %l : tensor<5x3xf32>
  return %C
}"""
    schedule(text, lambda a: a.max(axis=(1, 2)))


@pytest.mark.parametrize("sched, msg", [
    ("%i, %k = te.axes %C\n  %CF = te.rfactor %C, %i : tensor<4x4xf32>", "axis 'i' of 'C' is not a reduce axis"),
    ("%i, %k = te.axes %C\n  %ko, %ki = te.split %k {factor = 5}\n  %CF = te.rfactor %C, %ki : tensor<5x4xf32>\n"
     "  te.unroll %ko", "axis handle 'ko' was consumed by te.rfactor"),
    ("%i, %k = te.axes %C\n  te.unroll %k\n  %CF = te.rfactor %C, %k : tensor<10x4xf32>",
     "te.rfactor of 'C' must come before its other schedule ops"),
])
def test_rfactor_diagnostics(sched, msg):
    m = parse_module(ROWSUM.replace("SCHEDULE", "  " + sched), "s.te")
    with pytest.raises(DiagnosticError, match=msg):
        apply_to_func(m.body.first)


# -- argmax / argmin / user reducers ----------------------------------------------------

ARG = """te.func @a(%A: tensor<5x3x4xf32>) -> tensor<5xi32> {
  %I = te.compute [%i] reduce [%k: 3, %l: 4] "KIND" : tensor<5xi32> {
    %a = te.read %A[%i, %k, %l] : f32
    yield %a
  }
SCHEDULE
  return %I
}
"""


@pytest.mark.parametrize("kind", ["argmax", "argmin"])
@pytest.mark.parametrize("sched", ["", """  %i, %k, %l = te.axes %I
  %lo, %li = te.split %l {factor = 3}
  te.reorder %li, %k, %lo, %i"""])
def test_argmax_argmin(kind, sched):
    a = RNG.integers(0, 3, (5, 3, 4)).astype(np.float32)   # many ties: the first one wins
    fn = np.argmax if kind == "argmax" else np.argmin
    out, _ = schedule(ARG.replace("KIND", kind).replace("SCHEDULE", sched),
                      lambda x: fn(x.reshape(5, -1), axis=1).astype(np.int32), [a])
    assert "%I_val = te.realize : tensor<5xf32>" in out


LOGSUMEXP = """te.reducer @logaddexp(%acc: f32, %x: f32) identity -inf {
  %m = arith.maximumf %acc, %x : f32
  %n = arith.minimumf %acc, %x : f32
  %d = arith.subf %n, %m : f32
  %e = te.intrin "exp"(%d) : f32
  %one = arith.constant 1.0 : f32
  %s = arith.addf %one, %e : f32
  %l = te.intrin "log"(%s) : f32
  %r = arith.addf %m, %l : f32
  yield %r
}
te.func @lse(%A: tensor<4x12xf32>) -> tensor<4xf32> {
  %C = te.compute [%i] reduce [%k: 12] @logaddexp : tensor<4xf32> {
    %a = te.read %A[%i, %k] : f32
    yield %a
  }
SCHEDULE
  return %C
}
"""


@pytest.mark.parametrize("sched", ["", """  %i, %k = te.axes %C
  %ko, %ki = te.split %k {factor = 5}
  %CF = te.rfactor %C, %ki : tensor<5x4xf32>"""])
def test_user_reducer(sched):
    def want(a):
        return np.logaddexp.reduce(a.astype(np.float64), axis=1).astype(np.float32)
    out, tir = schedule(LOGSUMEXP.replace("SCHEDULE", sched), want)
    assert "te.reducer @logaddexp" in out and "te.reducer" not in tir
    assert "te.intrin \"log\"" in out


def test_user_reducer_compiles_with_llvm():
    from tvmd.backend.llvm import jit
    a = RNG.standard_normal((4, 12)).astype(np.float32)
    m = parse_module(LOGSUMEXP.replace("SCHEDULE", "") + ARG.replace("KIND", "argmax").replace("SCHEDULE", ""))
    PassManager([(None, get_pass_class("lower-te-to-tir")())]).run(m)
    lib = jit.compile(m)
    out = np.zeros(4, np.float32)
    lib["lse"](a, out)
    np.testing.assert_allclose(out, np.logaddexp.reduce(a.astype(np.float64), axis=1), rtol=1e-5)
    b = RNG.integers(0, 4, (5, 3, 4)).astype(np.float32)
    idx = np.zeros(5, np.int32)
    lib["a"](b, idx)
    np.testing.assert_array_equal(idx, np.argmax(b.reshape(5, -1), axis=1))


def test_reducer_diagnostics():
    bad = LOGSUMEXP.replace("SCHEDULE", "").replace("@logaddexp :", "@nope :")
    with pytest.raises(DiagnosticError, match="reducer @nope is not a te.reducer of this module"):
        verify(parse_module(bad))
    bad = ARG.replace("KIND", "argmax").replace("SCHEDULE", "").replace("tensor<5xi32>", "tensor<5xf32>")
    with pytest.raises(DiagnosticError, match="an argmax tensor holds integer positions, not f32"):
        verify(parse_module(bad))


# -- storage_align / double_buffer -------------------------------------------------------

def test_storage_align_pads_the_row_and_double_buffer_marks_the_alloc():
    text, tir = schedule(MATMUL.replace("SCHEDULE", """
  %AS = te.cache_read %A, %C {scope = "shared"} : tensor<6x8xf32>
  te.storage_align %AS {axis = 0, factor = 16, offset = 1}
  te.double_buffer %AS"""), mm)
    assert '%AS = te.realize {scope = "shared", double_buffer} : tensor<6x17xf32>' in text
    assert 'tir.alloc {double_buffer} : memref<6x17xf32, "shared">' in tir


def test_storage_align_diagnostics():
    m = parse_module(MATMUL.replace("SCHEDULE", "  te.storage_align %C {axis = 0, factor = 4, offset = 1}"))
    with pytest.raises(DiagnosticError, match="cannot pad 'C': it is an output of the function"):
        apply_to_func(m.body.first)


# -- te.extern ------------------------------------------------------------------------------

EXTERN = """tir.func @reverse_rows(%X: memref<4x6xf32>, %Y: memref<4x6xf32>) {
  tir.for %i = 0 to 4 {
    tir.for %j = 0 to 6 {
      %c5 = arith.constant 5 : index
      %r = arith.subi %c5, %j : index
      %v = tir.load %X[%i, %r] : f32
      tir.store %v, %Y[%i, %j] : f32
    }
  }
}
te.func @f(%A: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %B = te.compute [%i, %j] : tensor<4x6xf32> {
    %a = te.read %A[%i, %j] : f32
    %e = te.intrin "exp"(%a) : f32
    yield %e
  }
  %R = te.extern @reverse_rows(%B) : tensor<4x6xf32>
  %C = te.compute [%i, %j] : tensor<4x6xf32> {
    %r = te.read %R[%i, %j] : f32
    %s = arith.addf %r, %r : f32
    yield %s
  }
SCHEDULE
  return %C
}
"""


def extern_want(a):
    return 2 * np.exp(a)[:, ::-1]


@pytest.mark.parametrize("sched", ["", "  %i, %j = te.axes %C\n  te.parallel %i"])
def test_extern_runs_everywhere(sched):
    out, tir = schedule(EXTERN.replace("SCHEDULE", sched), extern_want)
    assert "te.extern_call @reverse_rows(%B, %R)" in out
    assert "%R = tir.alloc : memref<4x6xf32>" in tir
    from tvmd.backend.llvm import jit
    m = parse_module(EXTERN.replace("SCHEDULE", sched))
    PassManager([(None, get_pass_class("lower-te-to-tir")())]).run(m)
    a = RNG.standard_normal((4, 6)).astype(np.float32)
    c = np.zeros((4, 6), np.float32)
    jit.compile(m)["f"](a, c)
    np.testing.assert_allclose(c, extern_want(a), rtol=1e-5)


def test_extern_diagnostics():
    bad = EXTERN.replace("SCHEDULE", "").replace("te.extern @reverse_rows(%B) : tensor<4x6xf32>",
                                                 "te.extern @reverse_rows(%B, %A) : tensor<4x6xf32>")
    with pytest.raises(DiagnosticError, match="@reverse_rows takes 2 buffer"):
        verify(parse_module(bad))
    bad = EXTERN.replace("SCHEDULE", "").replace("@reverse_rows(%B)", "@nope(%B)")
    with pytest.raises(DiagnosticError, match="@nope is not a tir.func of this module"):
        verify(parse_module(bad))
    m = parse_module(EXTERN.replace("SCHEDULE", "  %i, %j = te.axes %C\n  te.compute_at %B, %i"))
    with pytest.raises(DiagnosticError, match="'B' is also read by the te.extern @reverse_rows"):
        apply_to_func(m.lookup("f"))


def test_schedule_builder_stage_ops():
    """The Python ScheduleBuilder writes the same ops (rfactor's type from the split)."""
    from tvmd.dialects.te.builder import Emitter, ScheduleBuilder
    m = parse_module(MATMUL.replace("SCHEDULE", ""))
    f = m.body.first
    c = f.body.first.results[0]
    a = f.body.args[0]
    ret = f.return_op.detach()
    s = ScheduleBuilder(Emitter(f.body))
    s.cache_read(a, [c], "shared")
    i, j, k = s.axes(c)
    ko, ki = s.split(k, factor=3)
    cf = s.rfactor(c, ko, factor_axis=2)
    assert str(cf.type) == "tensor<6x10x3xf32>"
    s.set_scope(cf, "local")
    f.body.append(ret)
    text = print_module(m)
    assert '%A_shared = te.cache_read %A, %C {scope = "shared"} : tensor<6x8xf32>' in text
    assert "%C_rf = te.rfactor %C, %k.outer {factor_axis = 2} : tensor<6x10x3xf32>" in text
    schedule(text, mm)


def test_vthread_binding():
    text, _ = schedule(MATMUL.replace("SCHEDULE", """  %i, %j, %k = te.axes %C
  %jo, %ji = te.split %j {nparts = 2}
  te.bind %jo {thread = "vthread"}"""), mm)
    assert 'thread("vthread")' in text


# -- the compute language: index math, select, casts, intrinsics ------------------------

LANG = """te.func @lang(%A: tensor<6x4xf32>, %B: tensor<3xi32>) -> tensor<6x4xf32> {
  %C = te.compute [%i, %j] : tensor<6x4xf32> {
    %c2 = arith.constant 2 : index
    %q = arith.floordivsi %i, %c2 : index
    %r = arith.floormodsi %i, %c2 : index
    %b = te.read %B[%q] : i32
    %bf = arith.sitofp %b : i32 to f32
    %ri = arith.index_cast %r : index to i64
    %rf = arith.sitofp %ri : i64 to f32
    %a = te.read %A[%i, %j] : f32
    %z = arith.constant 0.0 : f32
    %pos = arith.cmpf ogt, %a, %z : f32
    %ab = te.intrin "fabs"(%a) : f32
    %h = arith.constant 0.5 : f32
    %p = te.intrin "pow"(%ab, %h) : f32
    %s = arith.select %pos, %p, %bf : f32
    %t = arith.addf %s, %rf : f32
    yield %t
  }
SCHEDULE
  return %C
}
"""


@pytest.mark.parametrize("sched", ["", "  %i, %j = te.axes %C\n  %f = te.fuse %i, %j\n  %o, %n = te.split %f {factor = 5}"])
def test_compute_language_index_math_select_casts(sched):
    a = RNG.standard_normal((6, 4)).astype(np.float32)
    b = np.array([3, -1, 7], np.int32)

    def want(a, b):
        i = np.arange(6)[:, None]
        return np.where(a > 0, np.sqrt(np.abs(a)), b[i // 2].astype(np.float32)) + (i % 2)
    schedule(LANG.replace("SCHEDULE", sched), want, [a, b])
    from tvmd.backend.llvm import jit
    m = parse_module(LANG.replace("SCHEDULE", sched))
    PassManager([(None, get_pass_class("lower-te-to-tir")())]).run(m)
    c = np.zeros((6, 4), np.float32)
    jit.compile(m)["lang"](a, b, c)
    np.testing.assert_allclose(c, want(a, b), rtol=1e-5)


def test_cache_read_tiles_computed_at_the_reduce_loop():
    """The GPU matmul shape of schedule: shared tiles of both inputs loaded
    at each step of the outer reduce loop, rows padded by storage_align."""
    text = """te.func @mm(%A: tensor<8x12xf32>, %B: tensor<12x8xf32>) -> tensor<8x8xf32> {
  %C = te.compute [%i, %j] reduce [%k: 12] "sum" : tensor<8x8xf32> {
    %a = te.read %A[%i, %k] : f32
    %b = te.read %B[%k, %j] : f32
    %m = arith.mulf %a, %b : f32
    yield %m
  }
  %AS = te.cache_read %A, %C {scope = "shared"} : tensor<8x12xf32>
  %BS = te.cache_read %B, %C {scope = "shared"} : tensor<12x8xf32>
  %i, %j, %k = te.axes %C
  %io, %ii = te.split %i {factor = 4}
  %jo, %ji = te.split %j {factor = 4}
  %ko, %ki = te.split %k {factor = 4}
  te.reorder %io, %jo, %ko, %ii, %ji, %ki
  te.compute_at %AS, %ko
  te.compute_at %BS, %ko
  te.storage_align %AS {axis = 0, factor = 4, offset = 1}
  te.storage_align %BS {axis = 0, factor = 4, offset = 1}
  return %C
}"""
    out, tir = schedule(text, mm)
    assert '%AS = te.realize {scope = "shared"} : tensor<4x5xf32>' in out
    assert '%BS = te.realize {scope = "shared"} : tensor<4x5xf32>' in out
    assert 'memref<4x5xf32, "shared">' in tir


# -- schedule files --------------------------------------------------------------------------

@pytest.mark.parametrize("sched, line, msg", [
    ("te.schedule @mm {\n  %i, %j, %k = te.axes %C\n  te.parallel %k\n}\n", 3, "cannot parallelize reduce axis 'k'"),
    ("\n// c\nte.schedule @nn {\n}\n", 3, "no te.func @nn to schedule in the input (te.funcs: @mm)"),
    ("te.schedule @mm {\n  %i, %j, %k = te.axes %D\n}\n", 2, "use of undeclared SSA value name '%D'"),
    ("te.schedule @mm {\n  %i, %j, %k = te.axes %C\n", 1, "te.schedule @mm has no closing '}'"),
    ("%i = te.axes %C\n", 1, "expected 'te.schedule @name {'"),
])
def test_schedule_file_diagnostics_point_into_the_file(tmp_path, sched, line, msg):
    from tvmd.conversion.te_to_tir.apply_schedule import ApplySchedule
    from tvmd.ir.pass_manager import PassContext
    p = tmp_path / "s.te"
    p.write_text(sched)
    m = parse_module(MATMUL.replace("SCHEDULE", ""), "k.te")
    with pytest.raises(DiagnosticError) as ei:
        ApplySchedule.from_options(str(p)).run(m, PassContext())
    d = ei.value.diagnostics[0]
    assert msg in d.message and d.loc.file_line_col()[:2] == (str(p), line)


def test_schedule_file_adds_to_the_schedule_beside_the_compute(tmp_path):
    from tvmd.conversion.te_to_tir.apply_schedule import ApplySchedule
    from tvmd.ir.pass_manager import PassContext
    p = tmp_path / "s.te"
    p.write_text("te.schedule @mm {\n  te.vectorize %j\n}\n")
    m = parse_module(MATMUL.replace("SCHEDULE", "  %i, %j, %k = te.axes %C\n  te.parallel %i"), "k.te")
    a, b = args_for(m.body.first)
    ApplySchedule.from_options(f"file={p}").run(m, PassContext())
    verify(m)
    kinds = [op.attributes["kind"] for op in m.walk() if op.name == "tir.for"]
    assert kinds[:2] == ["parallel", "vectorized"]
    np.testing.assert_allclose(run(m.body.first, a, b)[0], a @ b, rtol=1e-5, atol=1e-5)
