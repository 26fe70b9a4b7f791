"""Regressions from the fuzzer (bench/fuzz/): each input once ended in a
traceback, an internal error or a MemoryError, and must now be a located
diagnostic (file:line:col: error: with the source line and a caret), exit 1.
Reproducers that read well as text live in test/lit instead."""

import re

import pytest

from tvmd.tools import opt_main

LOCATED = re.compile(r"^\S+:\d+:\d+: error: ", re.M)


def run_opt(tmp_path, capsys, text, *passes, name="in.relay"):
    p = tmp_path / name
    p.write_text(text)
    rc = opt_main.main([str(p), *passes, "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    return rc, err


def assert_located(rc, err, message):
    assert rc == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert LOCATED.search(err), err
    assert message in err, err
    assert "^" in err, err


def test_huge_dimension_literal_is_located(tmp_path, capsys):
    # int() of more than 4300 digits raises ValueError in Python itself
    text = f"relay.func @main(%x: tensor<{'9' * 5000}x2xf32>) {{\n  return %x\n}}\n"
    assert_located(*run_opt(tmp_path, capsys, text), "does not fit in i64")


N5000 = "9" * 5000
HUGE_LITERALS = [
    (f"tir.func @f(%A: memref<8xf32>) {{\n  tir.for %i = 0 to {N5000} {{\n  }}\n}}\n", "5000 digits is too long"),
    (f'te.func @f(%A: tensor<8xf32>) -> tensor<f32> {{\n  %B = te.compute [] reduce [%k: {N5000}] "sum" : '
     'tensor<f32> {\n    %a = te.read %A[%k] : f32\n    yield %a\n  }\n  return %B\n}\n', "5000 digits is too long"),
    (f"tir.func @f(%A: memref<8xf32>) {{\n  %a = arith.constant 1 : i{N5000}\n}}\n", "integer width"),
    (f"tir.func @f(%A: memref<8xf32>) {{\n  %a:{N5000} = arith.constant 1 : i32\n}}\n", "name(s) were given"),
    (f'tir.func @f(%A: memref<8xf32>) {{\n  %a = arith.constant 1 : i32 loc("x":{N5000}:1)\n}}\n',
     "5000 digits is too long"),
    (f"tir.func @f(%A: memref<8xf32>) {{\n  %a = arith.constant {N5000} : i32\n}}\n", "5000 digits is too long"),
]


@pytest.mark.parametrize("text,message", HUGE_LITERALS)
def test_huge_integer_literals_are_located(tmp_path, capsys, text, message):
    # each form once reached int() of 5000 digits, which Python refuses
    assert_located(*run_opt(tmp_path, capsys, text, name="in.mlir"), message)


def test_tvm_run_missing_entry_is_located_on_the_command_line(tmp_path, capsys):
    from tvmd.tools import run_main
    p = tmp_path / "in.relay"
    p.write_text("relay.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  return %x\n}\n")
    rc = run_main.main([str(p), "--random-inputs", "--entry", "nothere"])
    err = capsys.readouterr().err
    assert rc == 1 and "internal error" not in err, err
    assert err.startswith("<command line>:1:") and "no relay.func @nothere" in err, err
    # the caret points at the --entry value
    line, caret = err.splitlines()[1:3]
    assert line[caret.index("^"):].startswith("nothere"), err


def test_tvm_run_random_inputs_larger_than_memory(tmp_path, capsys):
    # once: numpy asked for 32 GiB and the run died of MemoryError (or the OOM killer)
    from tvmd.tools import run_main
    p = tmp_path / "in.relay"
    p.write_text("relay.func @main(%x: tensor<4294967295x64xf32>) {\n  %0 = nn.relu(%x)\n  return %0\n}\n")
    rc = run_main.main([str(p), "--random-inputs"])
    err = capsys.readouterr().err
    assert rc == 1 and "internal error" not in err and "Traceback" not in err, err
    assert "need more memory than is available" in err, err


def test_tvm_run_out_of_memory_is_a_diagnostic(tmp_path, capsys, monkeypatch):
    from tvmd.runtime import ndarray
    from tvmd.tools import run_main

    def no_memory(*a, **k):
        raise MemoryError("Unable to allocate 9.0 GiB")
    monkeypatch.setattr(ndarray, "random_array", no_memory)
    p = tmp_path / "in.relay"
    p.write_text("relay.func @main(%x: tensor<4xf32>) {\n  %0 = nn.relu(%x)\n  return %0\n}\n")
    rc = run_main.main([str(p), "--random-inputs"])
    err = capsys.readouterr().err
    assert rc == 1 and "internal error" not in err, err
    assert "error: out of memory: Unable to allocate 9.0 GiB" in err, err


def test_tvm_run_intermediate_buffers_larger_than_memory(tmp_path, capsys):
    # once: the memory plan's 512 GiB were asked of numpy (MemoryError, or the OOM killer)
    from tvmd.tools import run_main
    p = tmp_path / "in.relay"
    p.write_text("relay.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                 "  %0 = broadcast_to(%x) {shape = [1073741824, 16, 4]} : tensor<1073741824x16x4xf32>\n"
                 "  %1 = nn.relu(%0)\n  %2 = sum(%1) {axis = [0, 1]} : tensor<4xf32>\n  return %2\n}\n")
    rc = run_main.main([str(p), "--random-inputs", "--opt-level", "0"])
    err = capsys.readouterr().err
    assert rc == 1 and "internal error" not in err, err
    assert "bytes of intermediate buffers, more than the" in err, err


@pytest.mark.parametrize("line,col", [("0x10000000000000000000000000000000000000000", "1"), ("-3", "1"),
                                      ("1", "4294967296")])
def test_location_numbers_out_of_range(tmp_path, capsys, line, col):
    # a hex line number once reached int(..., 10): a ValueError traceback
    text = (f'relay.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {{\n'
            f'  %0 = nn.relu(%x) loc("model.onnx":{line}:{col})\n  return %0\n}}\n')
    assert_located(*run_opt(tmp_path, capsys, text), "a location's line and column are integers in [0, 2^31)")


def test_infinite_requantization_multiplier_is_located(tmp_path, capsys):
    # a scale of 2^64 squared by qnn.mul's lhs * rhs scale overflowed f32 and
    # reached int() of infinity in multiplier_shift
    text = """relay.func @main(%x: tensor<4xi8>) -> tensor<4xi8> {
  %s = constant dense<18446744073709551615.0> : tensor<f32>
  %t = constant dense<0.5> : tensor<f32>
  %z = constant dense<0> : tensor<i32>
  %m = qnn.mul(%x, %x, %s, %z, %s, %z, %t, %z) : tensor<4xi8>
  return %m
}
"""
    rc, err = run_opt(tmp_path, capsys, text, "--quantize")
    assert_located(rc, err, "requantization multiplier of inf")
    assert "RuntimeWarning" not in err, err


def test_non_numeric_auto_unroll_pragma_is_located(tmp_path, capsys):
    text = """tir.func @f(%A: memref<4x4xf32>) {
  tir.for %i = 0 to 4 attributes {pragma_auto_unroll_max_step = -inf} {
    tir.for %j = 0 to 4 {
    }
  }
}
"""
    assert_located(*run_opt(tmp_path, capsys, text, "--tir-unroll", name="in.tir"), "must be a whole number of steps")


def test_prefetch_of_a_read_spanning_past_its_dimension_ends(tmp_path, capsys):
    # j % 4294967295 made the prefetched span 2^32 columns of a 32-column
    # panel: a loop emitting billions of tir.prefetch ops (a hang)
    text = """te.func @f(%A: tensor<4x64xf32>, %Bp: tensor<2x64x32xf32>) -> tensor<4x64xf32> {
  %C = te.compute [%i, %j] reduce [%k: 64] "sum" : tensor<4x64xf32> {
    %a = te.read %A[%i, %k] : f32
    %c = arith.constant 4294967295 : index
    %jo = arith.floordivsi %j, %c : index
    %ji = arith.floormodsi %j, %c : index
    %b = te.read %Bp[%jo, %k, %ji] : f32
    %m = arith.mulf %a, %b : f32
    yield %m
  }
  %CL = te.cache_write %C {scope = "local"} : tensor<4x64xf32>
  %i, %j = te.axes %C
  %jo, %ji = te.split %j {factor = 32}
  te.reorder %jo, %i, %ji
  te.compute_at %CL, %jo
  %ci, %cj, %k = te.axes %CL
  te.reorder %k, %ci, %cj
  te.prefetch %Bp, %k {offset = 64}
  return %C
}
"""
    rc, err = run_opt(tmp_path, capsys, text, "--apply-schedule", name="in.te")
    assert rc == 0, err
    # the prefetch covers the panel's 32 columns: two lines of 16 floats
    out = (tmp_path / "out").read_text()
    assert re.findall(r"tir.prefetch %Bp\[%\d+, %\d+, %(c\d+)\]", out) == ["c0", "c16"], out


# -- campaign of seed 1207 (75,685 mutants) --------------------------------------------------

RFACTOR_OF_AN_AXIS = """te.func @f(%A: tensor<4x10xf32>) -> tensor<4xf32> {
  %C = te.compute [%i] reduce [%k: 10] "sum" : tensor<4xf32> {
    %a = te.read %A[%i, %k] : f32
    yield %a
  }
  %i, %k = te.axes %C
  %ko, %ki = te.split %k {factor = 4}
  %CF = te.rfactor %ki : tensor<4x4xf32>
  %x:2 = te.axes %CF
  return %C
}
"""

GUARDED_READ = """te.func @f(%A: tensor<4xT>) -> tensor<6xT> {
  %P = te.compute [%i] : tensor<6xT> {
    %c1 = arith.constant 1 : index
    %lo = arith.cmpi sge, %i, %c1 : index
    %j = arith.subi %i, %c1 : index
    %v = te.read %A[%j] if %lo else ELSE : T
    yield %v
  }
  return %P
}
"""


@pytest.mark.parametrize("name,text,passes,message", [
    # te.axes of an rfactor given one operand counted its axes from the missing one: IndexError
    ("in.te", RFACTOR_OF_AN_AXIS, (), "expected a stage"),
    # arith.bitcast to a type without a bit width: AttributeError in the verifier
    ("in.tir", "tir.func @f(%A: memref<8xf32>) {\n  %b = arith.constant 1.0 : f32\n"
               "  %c = arith.bitcast %b : f32 to none\n}\n", (), "cannot cast f32 to none"),
    # dyn.reshape to a shape of 2^32 values built a type of rank 2^32: MemoryError
    ("in.relay", "relay.func @f(%x: tensor<4x6xf32>, %s: tensor<4294967296xi64>) {\n"
                 "  %r = dyn.reshape(%x, %s)\n  return %r\n}\n", (), "the result's rank would be above"),
    # a guarded read's else value the element type cannot hold reached arith.constant: internal error
    ("in.te", GUARDED_READ.replace("T", "f32").replace("ELSE", "3.5e38"), ("--apply-schedule", "--lower-te-to-tir"),
     "overflows f32"),
    ("in.te", GUARDED_READ.replace("T", "i8").replace("ELSE", "300.5"), ("--apply-schedule", "--lower-te-to-tir"),
     "is not an integer, as a constant of i8 must be"),
])
def test_campaign_1207_findings_are_located(tmp_path, capsys, name, text, passes, message):
    assert_located(*run_opt(tmp_path, capsys, text, *passes, name=name), message)


@pytest.mark.parametrize("shape,factor,offset", [((4, 16, 16), 4294967295, 1), ((2, 6, 10), 8, 4),
                                                  ((3, 5, 7), 12, 5), ((3, 9, 4), 6, 2)])
def test_storage_align_with_a_huge_factor_ends(shape, factor, offset):
    # once: a search over every row length up to the factor (2^32 - 1: a hang)
    from tvmd.conversion.te_to_tir.storage import padded_shape

    class Stage:
        align = (0, factor, offset)
        storage_ops = []
        name = "S"
    got = padded_shape(Stage, shape)
    inner = shape[2]
    want = next(r for r in range(shape[1], shape[1] + factor + 1) if r * inner % factor == offset) \
        if factor < 1000 else None
    assert got[1] * inner % factor == offset and got[1] >= shape[1]
    assert want is None or got[1] == want   # the least such row, as the search found


def test_storage_align_without_a_solution_is_an_error(tmp_path, capsys):
    text = """te.func @f(%A: tensor<4x6x4xf32>) -> tensor<4x6x4xf32> {
  %B = te.compute [%i, %j, %k] : tensor<4x6x4xf32> {
    %a = te.read %A[%i, %j, %k] : f32
    yield %a
  }
  %C = te.compute [%i, %j, %k] : tensor<4x6x4xf32> {
    %b = te.read %B[%i, %j, %k] : f32
    yield %b
  }
  te.storage_align %B {axis = 0, factor = 8, offset = 1}
  return %C
}
"""
    # rows of 4 elements: the stride is a multiple of 4, never 1 modulo 8
    assert_located(*run_opt(tmp_path, capsys, text, "--apply-schedule", name="in.te"), "no row length makes")


def test_onnx_initializer_numpy_cannot_shape(tmp_path, capsys):
    # dims with a 0 among them whose other dims multiply past what numpy indexes:
    # numpy_helper.to_array's ValueError was an internal error
    import onnx
    from onnx import TensorProto, helper
    from tvmd.tools import run_main
    dims = [4, 0] + [64, 28, 70] * 6
    mask = helper.make_tensor("mask", TensorProto.FLOAT, dims, [])
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], initializer=[mask])
    p = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g), str(p))
    rc = run_main.main([str(p), "--random-inputs"])
    err = capsys.readouterr().err
    assert rc == 1 and "internal error" not in err and "Traceback" not in err, err
    assert "the nonzero ones multiply to" in err, err


# -- campaign of seed 2026 (64,932 mutants) --------------------------------------------------

def test_reducer_identity_its_type_cannot_hold_is_located(tmp_path, capsys):
    # 2^160 as an i32 identity once reached arith.constant: an internal error
    text = """te.reducer @bitor(%acc: i32, %x: i32) identity 0x10000000000000000000000000000000000000000 {
  %o = arith.ori %acc, %x : i32
  yield %o
}
te.func @any_bits(%A: tensor<2x5xi32>) -> tensor<2xi32> {
  %R = te.compute [%i] reduce [%k: 5] @bitor : tensor<2xi32> {
    %a = te.read %A[%i, %k] : i32
    yield %a
  }
  return %R
}
"""
    assert_located(*run_opt(tmp_path, capsys, text, "--apply-schedule", name="in.te"),
                   "integer constant 14615016373309029182...(49 digits) does not fit i32")


@pytest.mark.parametrize("src,dst", [("float16", "bfloat16"), ("bfloat16", "float16"),
                                     ("float8_e5m2fnuz", "float8_e5m2"), ("float8_e4m3fn", "float8_e5m2")])
def test_cast_between_float_formats_of_one_width(src, dst):
    # once arith.truncf between types of one width: IR that did not verify (or LLVM IR that did not)
    import ml_dtypes
    import numpy as np
    from tvmd.runtime.build import build
    names = {"float16": "f16", "bfloat16": "bf16", "float8_e5m2fnuz": "f8E5M2FNUZ", "float8_e5m2": "f8E5M2",
             "float8_e4m3fn": "f8E4M3FN"}
    st, dt = names[src], names[dst]
    m = (f"relay.func @main(%x: tensor<8x{st}>) -> tensor<8x{dt}> {{\n"
         f"  %d = cast(%x) {{dtype = \"{dst}\"}} : tensor<8x{dt}>\n  return %d\n}}\n")
    x = np.array([0.0, -0.5, 1.0, 3.0, -7.5, 0.125, 12.0, -2.0], np.float32)
    cm = build(m, progress=False, fallback=False)
    src_np = np.dtype(getattr(ml_dtypes, src, None) or src)
    dst_np = np.dtype(getattr(ml_dtypes, dst, None) or dst)
    xs = x.astype(src_np)
    arg = xs.view(np.uint16) if src == "bfloat16" else xs
    got = np.asarray(cm.run(arg))
    if dst == "bfloat16":
        got = got.view(ml_dtypes.bfloat16)
    want = xs.astype(np.float32).astype(dst_np)   # exactly representable: no double rounding
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_tvm_run_random_string_inputs(tmp_path, capsys):
    # --random-inputs on a string input once raised TypeError (no random data for dtype object)
    from tvmd.tools import run_main
    p = tmp_path / "in.relay"
    p.write_text('relay.func @main(%s: tensor<3xstring>) -> tensor<3xstring> {\n  return %s\n}\n')
    rc = run_main.main([str(p), "--random-inputs"])
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err, err
    assert rc == 0, err
