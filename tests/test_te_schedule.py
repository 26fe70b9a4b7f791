"""--apply-schedule on hand-written schedules: the loops it makes, the
numbers they compute, and a diagnostic at the schedule op for each illegal
request."""

import numpy as np
import pytest

from tvmd.conversion.te_to_tir.apply_schedule import apply_to_func
from tvmd.dialects.te.interpreter import run
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.ir.printer import print_module
from tvmd.ir.verifier import verify
from tvmd.parser import parse_module

MATMUL = """te.func @mm(%A: tensor<6x8xf32>, %B: tensor<8x10xf32>) -> tensor<6x10xf32> {
  %C = te.compute [%i, %j] reduce [%k: 8] "sum" : tensor<6x10xf32> {
    %a = te.read %A[%i, %k] : f32
    %b = te.read %B[%k, %j] : f32
    %m = arith.mulf %a, %b : f32
    yield %m
  }
  %R = te.compute [%i, %j] : tensor<6x10xf32> {
    %c = te.read %C[%i, %j] : f32
    %t = te.intrin "tanh"(%c) : f32
    yield %t
  }
SCHEDULE
  return %R
}
"""


def apply(schedule, text=MATMUL):
    m = parse_module(text.replace("SCHEDULE", schedule), "s.te")
    f = m.body.first
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(a.type.shape).astype(np.float32) for a in f.body.args]
    want = run(f, *args)
    apply_to_func(f)
    verify(m)
    printed = print_module(m)
    assert print_module(parse_module(printed)) == printed
    for g, w in zip(run(f, *args), want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return f, printed


def loops(f):
    return [(op.body.args[0].name, op.attributes["upper"], op.attributes["kind"], op.attributes.get("thread"))
            for op in f.walk() if op.name == "tir.for"]


def test_unscheduled_is_plain_nests():
    f, text = apply("")
    assert loops(f) == [("i", 6, "serial", None), ("j", 10, "serial", None), ("k", 8, "serial", None),
                        ("i", 6, "serial", None), ("j", 10, "serial", None)]
    assert "te.compute" not in text and text.count("te.realize") == 2


def test_split_fuse_reorder_kinds():
    f, text = apply("""
  %i, %j, %k = te.axes %C
  %jo, %ji = te.split %j {factor = 5}
  te.reorder %i, %jo, %k, %ji
  %f = te.fuse %i, %jo
  te.parallel %f
  te.vectorize %ji
  te.unroll %k
  te.compute_inline %R""".replace("te.compute_inline %R", ""))
    assert loops(f)[:4] == [("i.j.outer.fused", 12, "parallel", None), ("j.inner", 5, "vectorized", None),
                            ("k", 8, "unrolled", None), ("j.inner", 5, "vectorized", None)]
    assert "arith.floordivsi" in text and "arith.floormodsi" in text


def test_inexact_split_is_guarded():
    f, text = apply("""
  %i, %j, %k = te.axes %C
  %jo, %ji = te.split %j {factor = 4}
  %ko, %ki = te.split %k {nparts = 3}""")
    assert ("j.outer", 3, "serial", None) in loops(f) and ("k.outer", 3, "serial", None) in loops(f)
    # j's guard encloses the init and the k loops; k's guard is inside them
    assert text.count("tir.if") == 2


def test_tile_bind_pragma():
    f, text = apply("""
  %i, %j = te.axes %R
  %io, %jo, %ii, %ji = te.tile %i, %j {x_factor = 2, y_factor = 5}
  te.bind %io {thread = "blockIdx.x"}
  te.bind %ii {thread = "threadIdx.x"}
  te.pragma %ji {auto_unroll_max_step = 8}""")
    assert loops(f)[3:] == [("i.outer", 3, "thread", "blockIdx.x"), ("j.outer", 2, "serial", None),
                            ("i.inner", 2, "thread", "threadIdx.x"), ("j.inner", 5, "serial", None)]
    assert "attributes {pragma_auto_unroll_max_step = 8}" in text


CHAIN = """te.func @c(%A: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %P = te.compute [%i, %j] : tensor<4x6xf32> {
    %a = te.read %A[%i, %j] : f32
    %e = te.intrin "exp"(%a) : f32
    yield %e
  }
  %Q = te.compute [%i, %j] : tensor<4x6xf32> {
    %p = te.read %P[%i, %j] : f32
    %s = arith.addf %p, %p : f32
    yield %s
  }
SCHEDULE
  return %Q
}
"""


def test_compute_inline_and_root():
    f, text = apply("  te.compute_inline %P", CHAIN)
    assert text.count("te.realize") == 1 and text.count("tir.for") == 2 and "te.intrin" in text
    f, text = apply("  te.compute_inline %P\n  te.compute_root %P", CHAIN)
    assert text.count("te.realize") == 2 and text.count("tir.for") == 4


def test_scheduling_an_inlined_stage():
    with pytest.raises(DiagnosticError) as ei:
        apply("  te.compute_inline %P\n  %i, %j = te.axes %P\n  te.parallel %i", CHAIN)
    d = ei.value.diagnostics[0]
    assert "stage 'P' is inlined (compute_inline), it has no loops to schedule" in d.message
    assert d.loc.file_line_col()[1] == 14 and d.notes[0].message == "inlined here"


def test_compute_at_into_inlined_stage():
    text = CHAIN.replace("  return %Q", """  %R = te.compute [%x, %y] : tensor<4x6xf32> {
    %q = te.read %Q[%x, %y] : f32
    yield %q
  }
  return %R""")
    with pytest.raises(DiagnosticError, match="cannot compute 'P' at an axis of 'Q', which is inlined"):
        apply("  %i, %j = te.axes %Q\n  te.compute_at %P, %j\n  te.compute_inline %Q", text)


def test_compute_at_tile_local_storage():
    f, text = apply("""
  %i, %j = te.axes %R
  %jo, %ji = te.split %j {factor = 5}
  te.compute_at %C, %jo
  %ci, %cj, %ck = te.axes %C
  te.reorder %ci, %ck, %cj""")
    assert "%C = te.realize : tensor<1x5xf32>" in text
    assert [l[0] for l in loops(f)] == ["i", "j.outer", "j", "k", "j", "j.inner"]


def test_compute_at_window_and_guards():
    text = """te.func @w(%A: tensor<9xf32>) -> tensor<7xf32> {
  %P = te.compute [%i] : tensor<9xf32> {
    %a = te.read %A[%i] : f32
    %e = te.intrin "exp"(%a) : f32
    yield %e
  }
  %S = te.compute [%o] reduce [%r: 3] "sum" : tensor<7xf32> {
    %x = arith.addi %o, %r : index
    %p = te.read %P[%x] : f32
    yield %p
  }
  %o, %r = te.axes %S
  %oo, %oi = te.split %o {factor = 3}
  te.compute_at %P, %oo
  return %S
}
"""
    f, out = apply("", text)
    assert "%P = te.realize : tensor<5xf32>" in out   # 3 outputs read a 5-element window


@pytest.mark.parametrize("schedule,line,msg", [
    ("""  %i, %j, %k = te.axes %C
  %jo, %ji = te.split %j {factor = 2}
  %x, %y = te.split %j {factor = 2}""", 15, "axis 'j' was already split"),
    ("""  %i, %j, %k = te.axes %C
  %f = te.fuse %i, %j
  te.parallel %i""", 15, "axis 'i' was already fused"),
    ("""  %i, %j, %k = te.axes %C
  %f = te.fuse %i, %k""", 14, "fused axes must be adjacent"),
    ("""  %i, %j, %k = te.axes %C
  %f = te.fuse %j, %k""", 14, "cannot fuse a spatial axis with a reduce axis"),
    ("""  %i, %j, %k = te.axes %C
  te.vectorize %k""", 14, "cannot vectorize reduce axis 'k'"),
    ("""  %i, %j, %k = te.axes %C
  te.parallel %k""", 14, "cannot parallelize reduce axis 'k'"),
    ("""  %i, %j, %k = te.axes %C
  te.bind %k {thread = "threadIdx.x"}""", 14, "cannot bind reduce axis 'k' to a thread"),
    ("""  %i, %j, %k = te.axes %C
  te.parallel %i
  te.vectorize %i""", 15, "axis 'i' is already parallel"),
    ("""  %i, %j, %k = te.axes %C
  %a, %b = te.split %i {nparts = -1}""", 14, "split nparts must be positive, got -1"),
    ("""  %i, %j, %k = te.axes %C
  te.compute_at %C, %i""", 14, "cannot compute 'C' at one of its own axes"),
    ("""  %i, %j = te.axes %R
  te.compute_inline %R""", 14, "cannot inline 'R': it is an output of the function"),
    ("""  %i, %j = te.axes %R
  te.compute_at %C, %j
  %a, %b = te.split %j {factor = 2}""", 14, "axis 'j' of 'R' was split or fused after it was named here"),
    ("""  te.compute_inline %R""", 13, "it is an output"),
    ("""  %i, %j, %k = te.axes %C
  te.compute_inline %C""", 14, "cannot inline 'C': it is a reduction"),
])
def test_illegal_schedules(schedule, line, msg):
    with pytest.raises(DiagnosticError) as ei:
        apply(schedule)
    d = ei.value.diagnostics[0]
    assert msg in d.message
    assert d.loc.file_line_col()[1] == line


def test_stale_handle_note_points_at_the_split():
    with pytest.raises(DiagnosticError) as ei:
        apply("""  %i, %j, %k = te.axes %C
  %jo, %ji = te.split %j {factor = 2}
  te.unroll %j""")
    d = ei.value.diagnostics[0]
    assert d.notes[0].message == "split here" and d.notes[0].loc.file_line_col()[1] == 14


def test_compute_at_needs_the_only_consumer():
    text = """te.func @f(%A: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %P = te.compute [%i] : tensor<4xf32> {
    %a = te.read %A[%i] : f32
    yield %a
  }
  %Q = te.compute [%i] : tensor<4xf32> {
    %a = te.read %P[%i] : f32
    yield %a
  }
  %R = te.compute [%i] : tensor<4xf32> {
    %a = te.read %P[%i] : f32
    yield %a
  }
  %i = te.axes %Q
  te.compute_at %P, %i
  return %Q, %R
}
"""
    with pytest.raises(DiagnosticError, match="'P' is also read by 'R'; compute_at needs a single consumer"):
        apply("", text)


def test_compute_at_bounds_of_products_and_clamps():
    text = """te.func @f(%A: tensor<9xf32>) -> tensor<3xf32> {
  %B = te.compute [%i] : tensor<9xf32> {
    %a = te.read %A[%i] : f32
    %e = te.intrin "exp"(%a) : f32
    yield %e
  }
  %C = te.compute [%i] reduce [%k: 3] "sum" : tensor<3xf32> {
    %s = arith.muli %i, %i : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %t = arith.addi %s, %k : index
    %u = arith.subi %t, %c1 : index
    %lo = arith.maxsi %u, %c1 : index
    %m = arith.minsi %lo, %c8 : index
    %b = te.read %B[%m] : f32
    yield %b
  }
  %i, %k = te.axes %C
  te.compute_at %B, AT
  return %C
}
"""
    f, out = apply("", text.replace("AT", "%i"))    # i fixed: i*i is a point, the clamp a 3-wide window
    assert "%B = te.realize : tensor<3xf32>" in out
    with pytest.raises(DiagnosticError) as ei:      # at the root nothing is fixed: i*i is unbounded
        apply("", text.replace("te.compute_at %B, AT", "%p, %q = te.split %i {factor = 3}\n  te.compute_at %B, %p"))
    d = ei.value.diagnostics[0]
    assert d.message == ("'te.compute_at' op cannot bound the region of 'B' read by 'C': "
                         "it multiplies two loop-dependent indices")
    assert d.loc.file_line_col()[1] == 20
