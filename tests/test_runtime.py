"""The executor for lowered modules, numpy interop, and tvm-run."""

import subprocess
import sys

import numpy as np
import pytest

from tvmd.parser import parse_module
from tvmd.runtime.executor import ExecutionError, Executor, reference_run
from tvmd.runtime.ndarray import as_aligned, check_buffer, empty_aligned, is_aligned, random_array

LOWERED = """
tir.func @fused_add_relu(%A: memref<4x8xf32>, %B: memref<4x8xf32>, %C: memref<4x8xf32>) {
  tir.for %i = 0 to 4 parallel {
    tir.for %j = 0 to 8 vectorized {
      %a = tir.load %A[%i, %j] : f32
      %b = tir.load %B[%i, %j] : f32
      %s = arith.addf %a, %b : f32
      %z = arith.constant 0.0 : f32
      %r = arith.maximumf %s, %z : f32
      tir.store %r, %C[%i, %j] : f32
    }
  }
}
tir.func @fused_dense(%X: memref<4x8xf32>, %W: memref<3x8xf32>, %Y: memref<4x3xf32>) {
  tir.for %i = 0 to 4 {
    tir.for %n = 0 to 3 {
      %z = arith.constant 0.0 : f32
      tir.store %z, %Y[%i, %n] : f32
      tir.for %k = 0 to 8 {
        %x = tir.load %X[%i, %k] : f32
        %w = tir.load %W[%n, %k] : f32
        %y = tir.load %Y[%i, %n] : f32
        %p = arith.mulf %x, %w : f32
        %s = arith.addf %y, %p : f32
        tir.store %s, %Y[%i, %n] : f32
      }
    }
  }
}
relay.func @helper(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = nn.relu(%a) : tensor<4x8xf32>
  return %0
}
relay.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x3xf32> {
  %c = constant dense<1.0> : tensor<4x8xf32>
  %w = constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], [-1.0, 0.0, 1.0, 0.0, -1.0, 0.0, 1.0, 0.0]]> : tensor<3x8xf32>
  %0 = call @fused_add_relu(%x, %y) : tensor<4x8xf32>
  %1 = subtract(%0, %c) : tensor<4x8xf32>
  %2 = call @helper(%1) : tensor<4x8xf32>
  %3 = call @fused_dense(%2, %w) : tensor<4x3xf32>
  return %3
}
"""

REFERENCE = """
relay.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x3xf32> {
  %c = constant dense<1.0> : tensor<4x8xf32>
  %w = constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], [-1.0, 0.0, 1.0, 0.0, -1.0, 0.0, 1.0, 0.0]]> : tensor<3x8xf32>
  %0 = add(%x, %y) : tensor<4x8xf32>
  %1 = nn.relu(%0) : tensor<4x8xf32>
  %2 = subtract(%1, %c) : tensor<4x8xf32>
  %3 = nn.relu(%2) : tensor<4x8xf32>
  %4 = nn.dense(%3, %w) : tensor<4x3xf32>
  return %4
}
"""

W = np.array([[1, 2, 3, 4, 5, 6, 7, 8], [0.5] * 8, [-1, 0, 1, 0, -1, 0, 1, 0]], np.float32)


def numpy_ref(x, y):
    return np.maximum(np.maximum(x + y, 0) - 1, 0) @ W.T


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((4, 8)).astype(np.float32), rng.standard_normal((4, 8)).astype(np.float32)


def test_executor_runs_kernels_relay_ops_calls_and_constants():
    ex = Executor(parse_module(LOWERED))
    x, y = inputs()
    out = ex.run(x, y)
    np.testing.assert_allclose(out, numpy_ref(x, y), rtol=1e-5, atol=1e-5)
    assert ex.input_names == ["x", "y"]
    x2, y2 = inputs(1)
    np.testing.assert_allclose(ex(x2, y2), numpy_ref(x2, y2), rtol=1e-5, atol=1e-5)


def test_executor_accepts_text_and_checks_inputs():
    ex = Executor(LOWERED)
    x, y = inputs()
    with pytest.raises(ExecutionError, match="dtype float64"):
        ex.run(x.astype(np.float64), y)
    with pytest.raises(ExecutionError, match="shape"):
        ex.run(x[:2], y)
    with pytest.raises(ExecutionError, match="takes 2 input"):
        ex.run(x)


def test_executor_needs_an_entry():
    with pytest.raises(ExecutionError, match="no relay.func @main"):
        Executor(LOWERED.split("relay.func @helper")[0])


def test_reference_run_interprets_kernels_and_pure_relay():
    x, y = inputs()
    lowered = reference_run(parse_module(LOWERED), "main", x, y)
    pure = reference_run(parse_module(REFERENCE), "main", x, y)
    np.testing.assert_allclose(lowered[0], numpy_ref(x, y), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pure[0], numpy_ref(x, y), rtol=1e-5, atol=1e-5)


def test_aligned_arrays():
    a = empty_aligned((3, 5), np.float32)
    assert a.ctypes.data % 64 == 0 and a.flags.c_contiguous and a.shape == (3, 5)
    b = np.arange(10, dtype=np.float32)[1:]
    c = as_aligned(b)
    assert is_aligned(c) and np.array_equal(b, c)
    assert as_aligned(a) is a
    r = random_array((2, 3), "int32")
    assert r.dtype == np.int32 and is_aligned(r)
    # numpy's own floats are drawn in their own precision (not through f32)
    assert np.array_equal(random_array((4,), "float64"), np.random.default_rng(0).standard_normal(4))
    import ml_dtypes   # tvm-run --random-inputs on a float8 / bfloat16 / int4 input
    for dt in (ml_dtypes.float8_e4m3fn, ml_dtypes.bfloat16, ml_dtypes.int4):
        r = random_array((50,), dt)
        assert r.dtype == dt and is_aligned(r) and np.isfinite(r.astype(np.float32)).all()
        assert len(np.unique(r.astype(np.float32))) > 1
    with pytest.raises(ValueError, match="shape"):
        check_buffer(a, "float32", (3, 4), "arg")
    assert check_buffer(a, "float32", (None, 5), "arg") is a


def _misaligned(n, offset=1):
    """A C-contiguous float32 array of n elements `offset` floats past a
    64-byte boundary (what numpy gives often enough: 16-byte alignment)."""
    base = empty_aligned((n + 16,), np.float32)
    a = base[offset:offset + n]
    assert a.ctypes.data % 64 == 4 * offset and a.flags.c_contiguous
    return a


def test_misaligned_inputs_and_outputs_go_in_without_a_copy():
    """Kernel parameters assume only element alignment: arrays at any
    float offset are passed as they are (no allocation the size of an
    input), and the output is written in the caller's array."""
    import tracemalloc
    from tvmd.backend.llvm import jit
    n = 1 << 20
    m = parse_module(f"""tir.func @add(%A: memref<{n}xf32>, %B: memref<{n}xf32>, %C: memref<{n}xf32>) {{
  tir.for %i = 0 to {n} vectorized {{
    %a = tir.load %A[%i] : f32
    %b = tir.load %B[%i] : f32
    %s = arith.addf %a, %b : f32
    tir.store %s, %C[%i] : f32
  }}
}}""")
    k = jit.compile(m)["add"]
    x, y, out = _misaligned(n, 1), _misaligned(n, 3), _misaligned(n, 5)
    x[:] = np.arange(n, dtype=np.float32)
    y[:] = 2.0
    k(x, y, out)   # warm: ctypes' own first-call allocations
    tracemalloc.start()
    try:
        k(x, y, out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * n // 4, f"a call allocated {peak} bytes: an input was copied"
    np.testing.assert_array_equal(out, np.arange(n, dtype=np.float32) + 2)


def test_build_runs_misaligned_inputs():
    from tvmd.runtime.build import build
    text = """relay.func @main(%x: tensor<64x48xf32>, %w: tensor<48x40xf32>, %b: tensor<64x40xf32>) -> tensor<64x40xf32> {
  %0 = nn.matmul(%x, %w) : tensor<64x40xf32>
  %1 = add(%0, %b) : tensor<64x40xf32>
  %2 = nn.relu(%1) : tensor<64x40xf32>
  return %2
}"""
    m = build(text, progress=False)
    x = _misaligned(64 * 48, 1).reshape(64, 48)
    w = _misaligned(48 * 40, 2).reshape(48, 40)
    b = _misaligned(64 * 40, 3).reshape(64, 40)
    rng = np.random.default_rng(1)
    for a in (x, w, b):
        a[...] = rng.standard_normal(a.shape)
    want = np.maximum(x.astype(np.float64) @ w + b, 0)
    np.testing.assert_allclose(m.run(x, w, b), want, rtol=1e-4, atol=1e-4)


# -- tvm-run -----------------------------------------------------------------------

class _Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def tvm_run(*args):
    """tvm-run in this process (a subprocess per call would cost most of the test's time)."""
    import contextlib
    import io

    from tvmd.tools.run_main import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return _Result(rc, out.getvalue(), err.getvalue())


def test_tvm_run_console_script():
    p = subprocess.run([sys.executable, "-m", "tvmd.tools.run_main", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("usage: tvm-run")


def test_tvm_run_compares_with_reference(tmp_path):
    low = tmp_path / "low.mlir"
    low.write_text(LOWERED)
    ref = tmp_path / "model.relay"
    ref.write_text(REFERENCE)
    x, y = inputs()
    np.save(tmp_path / "x.npy", x)
    p = tvm_run(str(low), "--input", f"x={tmp_path / 'x.npy'}", "--random-inputs", "--reference", str(ref),
                "--output-dir", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    assert "output 0: tensor<4x3xf32> [" in p.stdout
    assert "max abs error" in p.stdout and p.stdout.strip().endswith("PASS")
    saved = np.load(tmp_path / "out" / "out0.npy")
    assert saved.shape == (4, 3)


def test_tvm_run_reports_a_mismatch(tmp_path):
    low = tmp_path / "low.mlir"
    low.write_text(LOWERED)
    ref = tmp_path / "model.relay"
    ref.write_text(REFERENCE.replace("%3 = nn.relu(%2)", "%3 = nn.relu(%1)"))
    p = tvm_run(str(low), "--random-inputs", "--reference", str(ref))
    assert p.returncode == 1 and "FAIL" in p.stdout


def test_tvm_run_errors_are_diagnostics(tmp_path):
    low = tmp_path / "low.mlir"
    low.write_text(LOWERED)
    p = tvm_run(str(low))
    assert p.returncode == 1 and "error: missing input(s) x, y" in p.stderr and "Traceback" not in p.stderr
    p = tvm_run(str(low), "--input", "q=nothing.npy")
    assert p.returncode == 1 and "has no input 'q'" in p.stderr
    p = tvm_run(str(tmp_path / "missing.mlir"))
    assert p.returncode == 1 and "could not open input file" in p.stderr
    bad = tmp_path / "bad.mlir"
    bad.write_text("relay.func @main( {")
    p = tvm_run(str(bad))
    assert p.returncode == 1 and f"{bad}:1:" in p.stderr and "Traceback" not in p.stderr
    p = tvm_run(str(low), "--random-inputs", "--target", "llvm -mcpu")
    assert p.returncode == 1 and "invalid target" in p.stderr
