"""tvm-translate: outputs, diagnostics, atomic writes, start-up time."""

import contextlib
import io
import os
import subprocess
import sys
import time

import llvmlite.binding as llvm
import pytest

from tvmd.tools.translate_main import main

KERNELS = os.path.join(os.path.dirname(__file__), "tir_kernels")
ADD = os.path.join(KERNELS, "add_relu_2d.tir")


def translate(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return rc, out.getvalue(), err.getvalue()


def test_emit_llvm_verifies():
    rc, out, err = translate(ADD, "--emit=llvm")
    assert rc == 0, err
    llvm.parse_assembly(out).verify()
    assert "define void @add_relu_2d(" in out


def test_emit_llvm_optimized_and_asm():
    rc, out, _ = translate(ADD, "--emit=llvm", "-O3", "--target=llvm -mcpu=x86-64-v3")
    assert rc == 0 and "<16 x float>" in out     # vectorize.width 16 (min(extent, 16))
    rc, asm, _ = translate(ADD, "--emit", "asm", "--target", "llvm -mcpu=x86-64-v3")
    assert rc == 0 and "add_relu_2d:" in asm


def test_emit_obj_to_file_atomically(tmp_path):
    out = tmp_path / "k.o"
    out.write_bytes(b"old")
    rc, _, err = translate(ADD, "--emit=obj", "-o", str(out))
    assert rc == 0, err
    assert out.read_bytes()[:4] == b"\x7fELF"
    from tvmd.backend.llvm.jit import load_object
    assert "add_relu_2d" in load_object(str(out))
    # a failing run leaves the old output alone
    rc, _, _ = translate(os.path.join(KERNELS, "shared_reverse.tir"), "--emit=obj", "-o", str(out))
    assert rc == 1 and out.read_bytes()[:4] == b"\x7fELF"
    assert [p.name for p in tmp_path.iterdir()] == ["k.o"]


def test_emit_cuda():
    rc, out, _ = translate(os.path.join(KERNELS, "shared_reverse.tir"), "--emit=cuda")
    assert rc == 0 and "__syncthreads();" in out and "// launch @shared_reverse: grid=(4, 1, 1)" in out


# The command line is "tvm-translate add_relu_2d.tir ARGS": ARGS start at column 31.
@pytest.mark.parametrize("args, message, col", [
    (["--emit=wasm"], "unknown --emit kind 'wasm'", 38),
    (["--emit=llvm", "--target=llvm -mcpu"], "invalid target: expected -key=value in the target string, got '-mcpu'", 58),
    (["--emit=llvm", "--target=cuda"], "--emit=llvm needs a llvm target", 52),
    (["--emit=cuda", "--target=cuda -arch=90"], "invalid target: bad CUDA architecture '90'", 64),
    (["--emit=llvm", "--bogus"], "unknown option '--bogus'", 43),
    (["--emit=llvm", "--export-tvm-relay"], "--emit does not go with --export-tvm-relay", 31),
    ([], "no output kind", 1),
])
def test_command_line_errors(args, message, col, monkeypatch):
    monkeypatch.chdir(KERNELS)
    rc, out, err = translate("add_relu_2d.tir", *args)
    assert rc == 1 and out == ""
    assert f"<command line>:1:{col}: error: {message}" in err, err
    assert "^" in err and "Traceback" not in err


def test_input_errors_point_into_the_file(tmp_path):
    bad = tmp_path / "bad.tir"
    bad.write_text("tir.func @f(%A: memref<4xf32>) {\n  tir.store %A, %A[%A] : f32\n}\n")
    rc, _, err = translate(str(bad), "--emit=llvm")
    assert rc == 1 and f"{bad}:2:" in err and "^" in err
    rel = tmp_path / "relay.mlir"
    rel.write_text("relay.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x\n}\n")
    rc, _, err = translate(str(rel), "--emit=llvm")
    assert rc == 1 and "no tir.func to translate" in err
    rc, _, err = translate(str(tmp_path / "nope.tir"), "--emit=llvm")
    assert rc == 1 and "could not open input file" in err


def test_codegen_errors_are_located():
    rc, _, err = translate(os.path.join(KERNELS, "shared_reverse.tir"), "--emit=llvm")
    assert rc == 1 and "shared_reverse.tir:" in err and "synchronises GPU threads" in err
    assert "Traceback" not in err


def test_help_is_fast_and_lazy():
    code = ("import sys, time; t = time.perf_counter(); from tvmd.tools.translate_main import main; "
            "import io, contextlib\nwith contextlib.redirect_stdout(io.StringIO()): main(['--help'])\n"
            "print(time.perf_counter() - t); print(int(any(m in sys.modules for m in "
            "('numpy', 'llvmlite', 'lark'))))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    elapsed, heavy = p.stdout.split()
    assert heavy == "0"
    assert float(elapsed) < 0.3
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "tvmd.tools.translate_main", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("usage: tvm-translate")
    assert time.perf_counter() - t < 2
