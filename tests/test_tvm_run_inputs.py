"""tvm-run on bad inputs and options: one clean `error:` naming the file and
what is wrong, exit 1, never a traceback, never a huge allocation; -o never
clobbers a read-only file and writes through a symlink."""

import io
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from tools import run_tool  # noqa: E402

MODEL = """
relay.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = nn.relu(%x) : tensor<2x3xf32>
  return %0
}
"""


def tvm_run(*args, cwd=None):
    return run_tool("tvm-run", "tvmd.tools.run_main", [str(a) for a in args], cwd=cwd)


@pytest.fixture
def model(tmp_path):
    (tmp_path / "m.relay").write_text(MODEL)
    return tmp_path


def _fails(p, *needles):
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    assert "error: error:" not in p.stderr
    first = p.stderr.splitlines()[0]
    assert first.startswith("<command line>:1:") and ": error: " in first, p.stderr
    for n in needles:
        assert n in first, p.stderr
    return first


def _npz_bytes():
    buf = io.BytesIO()
    np.savez(buf, x=np.zeros((2, 3), np.float32))
    return buf.getvalue()


def test_empty_npy(model):
    (model / "e.npy").write_bytes(b"")
    _fails(tvm_run(model / "m.relay", "--input", "x=e.npy", cwd=model), "'e.npy'", "the file is empty")


def test_truncated_npz(model):
    (model / "t.npz").write_bytes(_npz_bytes()[:40])
    _fails(tvm_run(model / "m.relay", "--input", "x=t.npz", cwd=model), "'t.npz'", "truncated or corrupt .npz")


def test_whole_npz_is_refused_cleanly(model):
    (model / "a.npz").write_bytes(_npz_bytes())
    _fails(tvm_run(model / "m.relay", "--input", "x=a.npz", cwd=model), "'a.npz' is an .npz archive")


def test_truncated_npy(model):
    buf = io.BytesIO()
    np.save(buf, np.zeros((2, 3), np.float32))
    (model / "t.npy").write_bytes(buf.getvalue()[:-5])
    _fails(tvm_run(model / "m.relay", "--input", "x=t.npy", cwd=model), "'t.npy'", "holds only 19", "truncated")


def test_header_claiming_a_huge_array_is_refused_before_allocating(model):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False,
                                                "shape": (100_000_000_000,)})
    (model / "big.npy").write_bytes(buf.getvalue() + b"\0" * 16)
    p = tvm_run(model / "m.relay", "--input", "x=big.npy", cwd=model)
    _fails(p, "'big.npy'", "shape [100000000000]", "400000000000 bytes", "holds only 16")


def test_not_an_npy_file_and_a_malformed_header(model):
    (model / "j.npy").write_bytes(b"hello, world")
    _fails(tvm_run(model / "m.relay", "--input", "x=j.npy", cwd=model), "'j.npy'", "not a .npy file")
    (model / "h.npy").write_bytes(b"\x93NUMPY\x01\x00\x10\x00{garbage   }   \n")
    _fails(tvm_run(model / "m.relay", "--input", "x=h.npy", cwd=model), "'h.npy'", "malformed header")


def test_object_arrays_are_refused_without_unpickling(model):
    np.save(model / "o.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    _fails(tvm_run(model / "m.relay", "--input", "x=o.npy", cwd=model), "'o.npy'", "Python objects")


def test_missing_input_file(model):
    _fails(tvm_run(model / "m.relay", "--input", "x=nope.npy", cwd=model), "'nope.npy'", "No such file")


def test_good_input_still_runs(model):
    np.save(model / "x.npy", np.arange(-3, 3, dtype=np.float32).reshape(2, 3))
    p = tvm_run(model / "m.relay", "--input", "x=x.npy", cwd=model)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("output 0: tensor<2x3xf32> [0, 0, 0, 0, 1, 2]")


@pytest.mark.parametrize("args,msg", [
    (["--seed", "-1"], "--seed takes a non-negative integer, got '-1'"),
    (["--seed=-5"], "--seed takes a non-negative integer, got '-5'"),
    (["--seed", "x"], "--seed takes a non-negative integer, got 'x'"),
    (["--rtol", "nan"], "--rtol takes a finite number >= 0, got 'nan'"),
    (["--atol", "NaN"], "--atol takes a finite number >= 0, got 'NaN'"),
    (["--rtol=-1e-5"], "--rtol takes a finite number >= 0, got '-1e-5'"),
    (["--atol", "-0.5"], "--atol takes a finite number >= 0, got '-0.5'"),
    (["--atol", "inf"], "--atol takes a finite number >= 0, got 'inf'"),
])
def test_bad_seed_and_tolerances(model, args, msg):
    _fails(tvm_run(model / "m.relay", "--random-inputs", "--reference", model / "m.relay", *args), msg)


def test_zero_tolerances_and_a_seed_are_fine(model):
    p = tvm_run(model / "m.relay", "--random-inputs", "--seed", "7", "--reference", model / "m.relay",
                "--rtol", "0", "--atol", "0")
    assert p.returncode == 0, p.stderr
    assert p.stdout.endswith("PASS\n")


def test_output_refuses_a_read_only_file(model):
    ro = model / "ro.npy"
    ro.write_bytes(b"precious")
    ro.chmod(0o444)
    _fails(tvm_run(model / "m.relay", "--random-inputs", "-o", "ro.npy", cwd=model),
           "cannot write 'ro.npy'", "read-only")
    assert ro.read_bytes() == b"precious"
    assert sorted(x.name for x in model.iterdir()) == ["m.relay", "ro.npy"]


def test_output_writes_through_a_symlink(model):
    (model / "data").mkdir()
    (model / "data" / "y.npy").write_bytes(b"old")
    (model / "y.npy").symlink_to(model / "data" / "y.npy")
    p = tvm_run(model / "m.relay", "--random-inputs", "-o", "y.npy", cwd=model)
    assert p.returncode == 0, p.stderr
    assert (model / "y.npy").is_symlink()
    assert np.load(model / "data" / "y.npy").shape == (2, 3)
