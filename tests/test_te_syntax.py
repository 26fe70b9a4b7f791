"""te text: parse/print round trip (custom and generic forms), accessors,
and the parse and verifier errors of bad te."""

import pytest

from tvmd.ir.diagnostics import DiagnosticError
from tvmd.ir.printer import print_module
from tvmd.parser import parse_module

DENSE = """\
te.func @dense_relu(%A: tensor<1x64xf32>, %W: tensor<32x64xf32>) -> tensor<1x32xf32> attributes {tag = "x"} {
  %D = te.compute [%i, %j] reduce [%k: 64] "sum" : tensor<1x32xf32> {
    %a = te.read %A[%i, %k] : f32
    %w = te.read %W[%j, %k] : f32
    %m = arith.mulf %a, %w : f32
    yield %m
  }
  %R = te.compute [%i2, %j2] : tensor<1x32xf32> {
    %c = arith.cmpi slt, %i2, %j2 : index
    %d = te.read %D[%i2, %j2] if %c else -1.5 : f32
    %e = te.intrin "exp"(%d) : f32
    yield %e
  }
  %ri, %rj = te.axes %R
  %jo, %ji = te.split %rj {factor = 16}
  %p, %q = te.split %jo {nparts = 2}
  %f = te.fuse %ri, %p
  te.reorder %f, %q, %ji
  te.parallel %f
  te.vectorize %ji
  te.unroll %q
  te.pragma %f {auto_unroll_max_step = 16}
  te.compute_at %D, %f
  %x, %y, %z = te.axes %D
  %xo, %yo, %xi, %yi = te.tile %x, %y {x_factor = 1, y_factor = 4}
  te.bind %xo {thread = "blockIdx.x"}
  return %R
}
"""

SCHEDULED = """\
te.func @s(%A: tensor<8xf32>) -> tensor<8xf32> {
  %c4 = arith.constant 4 : index
  %B = te.realize : tensor<8xf32>
  tir.for %o = 0 to 2 parallel {
    tir.for %i = 0 to 4 vectorized {
      %0 = arith.muli %o, %c4 : index
      %1 = arith.addi %0, %i : index
      %a = te.read %A[%1] : f32
      te.write %a, %B[%1] : f32
    }
  }
  return %B
}
"""


@pytest.mark.parametrize("text", [DENSE, SCHEDULED])
def test_round_trip(text):
    m = parse_module(text)
    out = print_module(m)
    assert out == text
    generic = print_module(m, generic=True)
    assert print_module(parse_module(generic)) == text


def test_accessors():
    f = parse_module(DENSE).body.first
    d, r = [op for op in f.body.ops if op.name == "te.compute"]
    assert [a.name for a in d.spatial_axes] == ["i", "j"]
    assert [a.name for a in d.reduce_axes] == ["k"]
    assert d.reducer == "sum" and d.extents == (1, 32, 64) and d.reduce_extents == (64,)
    assert r.reducer is None and r.extents == (1, 32)
    read = next(op for op in r.body.ops if op.name == "te.read")
    assert read.guarded and read.attributes["else_value"] == -1.5
    assert [v.name for v in read.indices] == ["i2", "j2"] and read.condition.name == "c"
    assert f.function_type.results[0].shape == (1, 32)


def test_multiple_results_and_inferred_result_type():
    text = """\
te.func @two(%A: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %B = te.compute [%i] : tensor<4xf32> {
    %a = te.read %A[%i] : f32
    yield %a
  }
  return %B, %A
}
"""
    assert print_module(parse_module(text)) == text
    m = parse_module(text.replace(" -> (tensor<4xf32>, tensor<4xf32>)", ""))
    assert print_module(m) == text


def test_scalar_tensors():
    text = """\
te.func @sum(%A: tensor<f32>, %B: tensor<5xf32>) -> tensor<f32> {
  %S = te.compute [] reduce [%k: 5] "max" : tensor<f32> {
    %a = te.read %A[] : f32
    %b = te.read %B[%k] : f32
    %s = arith.addf %a, %b : f32
    yield %s
  }
  return %S
}
"""
    assert print_module(parse_module(text)) == text


BAD = [
    ("""te.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  %i = te.axes %A
  return %A
}""", 2, "te.axes needs a stage"),
    ("""te.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute [%i, %j] : tensor<4xf32> {
    %a = te.read %A[%i] : f32
    yield %a
  }
  return %B
}""", 2, "2 index name(s) for a rank-1 tensor"),
    ("""te.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute [%i] : tensor<4xf32> {
    %a = te.read %A[%i] : f32
    %c = arith.extf %a : f32 to f64
    yield %c
  }
  return %B
}""", 5, "yields f64 but the tensor holds f32"),
    ("""te.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute [%i] : tensor<4xf32> {
    %a = te.read %A[%i, %i] : f32
    yield %a
  }
  return %B
}""", 3, "gives 2 indices for a rank-1 tensor"),
    ("""te.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  te.write %A, %A[] : f32
  return %A
}""", 2, "has type tensor<4xf32>, not f32"),
    ("""te.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant 1.0 : f32
  %i = arith.constant 0 : index
  te.write %c, %A[%i] : f32
  return %A
}""", 4, "writes only into storage made by te.realize"),
    ("""te.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute [%i] reduce [%k: 0] "sum" : tensor<4xf32> {
    %a = te.read %A[%i] : f32
    yield %a
  }
  return %B
}""", 2, "reduce extents must be positive"),
    ("""te.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute [%i] : tensor<4xf32> {
    %a = te.read %A[%i] : f32
    %e = te.intrin "cbrt"(%a) : f32
    yield %e
  }
  return %B
}""", 4, "unknown intrinsic 'cbrt'"),
    ("""te.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute [%i] : tensor<4xf32> {
    %a = te.read %A[%i] : f32
    yield %a
  }
  %i = te.axes %B
  %o = te.split %i {factor = 2}
  return %B
}""", 7, "operation defines 2 result(s) but 1 name(s) were given"),
    ("""te.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute [%i] : tensor<4xf32> {
    %a = te.read %A[%i] : f32
    yield %a
  }
  %i = te.axes %B
  %o, %p = te.split %i {factor = 2, nparts = 2}
  return %B
}""", 7, "takes one of 'factor' or 'nparts'"),
    ("""te.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute [%i] : tensor<4xf32> {
    %a = te.read %A[%i] : f32
    yield %a
  }
  %i = te.axes %B
  te.bind %i {thread = "warp.x"}
  return %B
}""", 7, "attribute 'thread' must be one of"),
    ("""te.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute [%i] : tensor<4xf32> {
    %a = te.read %A[%i] : f32
    yield %a
  }
  return %A, %B
}""", 6, "returns 2 value(s)"),
]


@pytest.mark.parametrize("text,line,msg", BAD)
def test_errors(text, line, msg):
    with pytest.raises(DiagnosticError) as ei:
        parse_module(text, "t.te")
    d = ei.value.diagnostics[0]
    assert msg in d.message
    assert d.loc.file_line_col()[1] == line


def test_sibling_computes_keep_their_axis_names():
    text = """\
te.func @f(%A: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %B = te.compute [%i, %j] : tensor<4x4xf32> {
    %a = te.read %A[%i, %j] : f32
    yield %a
  }
  %C = te.compute [%i, %j] : tensor<4x4xf32> {
    %a = te.read %B[%j, %i] : f32
    yield %a
  }
  %i, %j = te.axes %C
  return %C
}
"""
    assert print_module(parse_module(text)) == text
