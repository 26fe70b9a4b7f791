"""tvm-run on relay text and ONNX models: compile, run, save, profile, diagnose."""

import contextlib
import io

import numpy as np
import pytest

MODEL = """
relay.func @main(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) -> tensor<2x4xf32> {
  %0 = nn.dense(%x, %w) : tensor<2x4xf32>
  %1 = nn.relu(%0) : tensor<2x4xf32>
  return %1
}
"""


class _Result:
    def __init__(self, rc, out, err):
        self.returncode, self.stdout, self.stderr = rc, out, err


def tvm_run(*args):
    from tvmd.tools.run_main import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return _Result(rc, out.getvalue(), err.getvalue())


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 8)).astype(np.float32)
    w = rng.standard_normal((4, 8)).astype(np.float32)
    (tmp_path / "m.relay").write_text(MODEL)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    np.save(tmp_path / "x64.npy", x.astype(np.float64))
    np.save(tmp_path / "x3.npy", np.zeros((3, 8), np.float32))
    return tmp_path, x, w


def test_runs_relay_text_and_saves_npz(files):
    d, x, w = files
    p = tvm_run(d / "m.relay", "--input", f"x={d / 'x.npy'}", "--input", f"w={d / 'w.npy'}",
                "--output", d / "out.npz")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("output 0: tensor<2x4xf32>")
    got = np.load(d / "out.npz")["out0"]
    np.testing.assert_allclose(got, np.maximum(x @ w.T, 0), rtol=1e-5, atol=1e-6)


def test_saves_npy_and_profiles(files):
    d, x, w = files
    p = tvm_run(d / "m.relay", "--input", f"x={d / 'x.npy'}", "--input", f"w={d / 'w.npy'}",
                "-o", d / "y.npy", "--profile", "--repeat", "3")
    assert p.returncode == 0, p.stderr
    np.testing.assert_allclose(np.load(d / "y.npy"), np.maximum(x @ w.T, 0), rtol=1e-5, atol=1e-6)
    lines = p.stdout.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("kernel"))
    assert "calls" in lines[head] and "share %" in lines[head] and "shapes" in lines[head]
    row = lines[head + 1].split()
    assert row[0] == "fused_nn_dense_nn_relu" and row[1] == "3"
    assert lines[head + 1].endswith("2x8, 4x8 -> 2x4")
    assert lines[head + 2].startswith("total")
    assert "median" in p.stdout and "planned vs" in p.stdout and "compile time:" in p.stdout


def test_input_errors_point_at_the_argument(files):
    d, _, _ = files
    p = tvm_run(d / "m.relay", "--input", f"x={d / 'x64.npy'}", "--random-inputs")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "input 'x' is tensor<2x8xf32>, but" in p.stderr and "holds float64" in p.stderr
    caret_line = p.stderr.splitlines()[2]
    cmd_line = p.stderr.splitlines()[1]
    assert cmd_line[caret_line.index("^"):].startswith("x=")
    p = tvm_run(d / "m.relay", "--input", f"x={d / 'x3.npy'}", "--random-inputs")
    assert p.returncode == 1 and "has shape [3, 8]" in p.stderr
    p = tvm_run(d / "m.relay", "--input", f"q={d / 'x.npy'}")
    assert p.returncode == 1 and "has no input 'q' (inputs: x, w)" in p.stderr
    p = tvm_run(d / "m.relay", "--input", f"x={d / 'nope.npy'}")
    assert p.returncode == 1 and "cannot read" in p.stderr
    p = tvm_run(d / "m.relay", "--random-inputs", "--output", d / "o.txt")
    assert p.returncode == 1 and ".npz or .npy" in p.stderr
    p = tvm_run(d / "m.relay", "--random-inputs", "--opt-level", "7")
    assert p.returncode == 1 and "0..3" in p.stderr
    assert not (d / "o.txt").exists()


def test_relay_type_errors_are_diagnostics(tmp_path):
    bad = tmp_path / "bad.relay"
    bad.write_text(MODEL.replace("tensor<2x4xf32>\n  %1", "tensor<2x5xf32>\n  %1"))
    p = tvm_run(bad, "--random-inputs")
    assert p.returncode == 1 and f"{bad}:" in p.stderr and "Traceback" not in p.stderr


def _onnx_model(path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    w = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return w


def test_runs_onnx_models_with_input_shapes(files):
    d, x, _ = files
    w = _onnx_model(d / "m.onnx")
    p = tvm_run(d / "m.onnx", "--input-shape", "x=2x8", "--input", f"x={d / 'x.npy'}", "-o", d / "o.npz")
    assert p.returncode == 0, p.stderr
    np.testing.assert_allclose(np.load(d / "o.npz")["out0"], np.maximum(x @ w, 0), rtol=1e-5, atol=1e-6)
    p = tvm_run("--onnx", d / "m.onnx", "--input-shape", "z=2x8", "--random-inputs")
    assert p.returncode == 1 and "the model has no input 'z'" in p.stderr
    p = tvm_run(d / "m.onnx", "--input-shape", "x=2xq")
    assert p.returncode == 1 and "--input-shape takes NAME=DIMS" in p.stderr
    (d / "junk.onnx").write_bytes(b"\x00garbage\xff")
    p = tvm_run(d / "junk.onnx", "--random-inputs")
    assert p.returncode == 1 and "Traceback" not in p.stderr and "error:" in p.stderr


def test_mixed_precision_runs_the_products_in_bf16(files):
    """--mixed-precision: the dense's operands rounded to bf16 (its sums in
    float32, then rounded as the pass casts them), against numpy on the
    rounded values; a bad type is a located error."""
    from tvmd.testing import bfloat16
    d, x, w = files
    p = tvm_run(d / "m.relay", "--input", f"x={d / 'x.npy'}", "--input", f"w={d / 'w.npy'}",
                "--mixed-precision", "bfloat16", "-o", d / "y.npy")
    assert p.returncode == 0, p.stderr
    r = bfloat16.rounded
    want = np.maximum(r(r(x).astype(np.float64) @ r(w).astype(np.float64).T), 0)
    got = np.load(d / "y.npy")
    np.testing.assert_allclose(got, want, rtol=2 ** -7, atol=1e-6)
    assert not np.allclose(got, np.maximum(x @ w.T, 0), rtol=1e-6, atol=0)   # not the float32 product
    p = tvm_run(d / "m.relay", "--random-inputs", "--mixed-precision", "bf16")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "--mixed-precision takes bfloat16 or float16, got 'bf16'" in p.stderr


def test_quantize_weights_stores_constant_weights_as_int8(tmp_path):
    """--quantize-weights int8: a constant dense weight rounded per output
    column to 127 steps of its largest (numpy, from the definition), the
    data and sums float32; a bad type, or with --mixed-precision, is a
    located error."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((6, 8)).astype(np.float32)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    rows = ", ".join("[" + ", ".join(repr(float(v)) for v in r) + "]" for r in w)
    (tmp_path / "c.relay").write_text(
        "relay.func @main(%x: tensor<3x8xf32>) -> tensor<3x6xf32> {\n"
        f"  %w = constant dense<[{rows}]> : tensor<6x8xf32>\n"
        "  %y = nn.dense(%x, %w) : tensor<3x6xf32>\n  return %y\n}\n")
    np.save(tmp_path / "x.npy", x)
    p = tvm_run(tmp_path / "c.relay", "--input", f"x={tmp_path / 'x.npy'}", "--quantize-weights", "int8",
                "-o", tmp_path / "y.npy")
    assert p.returncode == 0, p.stderr
    s = (np.abs(w).max(axis=1) / np.float32(127)).astype(np.float32)
    want = x.astype(np.float64) @ (np.rint(w / s[:, None]) * s[:, None]).T
    got = np.load(tmp_path / "y.npy")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert np.abs(got - x @ w.T).max() > 1e-4
    for extra, msg in ((["--quantize-weights", "int4"], "--quantize-weights takes int8, got 'int4'"),
                       (["--mixed-precision", "bfloat16", "--quantize-weights", "int8"], "do not combine"),
                       (["--quantize-weights", "int8", "--mixed-precision", "bfloat16"], "do not combine")):
        p = tvm_run(tmp_path / "c.relay", "--random-inputs", *extra)
        assert p.returncode == 1 and "Traceback" not in p.stderr and msg in p.stderr, p.stderr
