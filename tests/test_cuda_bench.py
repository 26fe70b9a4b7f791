"""bench/gpu.sh and bench/gpu_check.py: the same numerics checks run here
through the emulated launcher, and a clear failure without a GPU."""

import importlib.util
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "bench")


def load_gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", os.path.join(BENCH, "gpu_check.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gpu_check_emulated_numerics_pass(capsys):
    gc = load_gpu_check()
    assert gc.main(["--emulate"]) == 0
    out = capsys.readouterr().out
    for name in ("matmul", "add_relu", "conv2d", "softmax", "model"):
        line = next(ln for ln in out.splitlines() if ln.startswith(name))
        assert " yes " in line, line


def test_gpu_check_without_pycuda_exits_2(monkeypatch, capsys):
    gc = load_gpu_check()
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    with pytest.raises(SystemExit) as e:
        gc.main([])
    assert e.value.code == 2
    assert "pycuda is not installed" in capsys.readouterr().err


def test_gpu_sh_without_pycuda_exits_2(tmp_path):
    blocker = tmp_path / "pycuda"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('no pycuda in this test')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path), PYTHON=sys.executable)
    p = subprocess.run(["sh", os.path.join(BENCH, "gpu.sh")], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 2
    assert "pycuda is not installed" in p.stderr and "GPU" in p.stderr
