"""The fuzzer (bench/fuzz/): its classifier and minimiser on inputs whose
outcome is known, and a small fixed slice of the campaign that must find
nothing (the long campaign is run by hand: python bench/fuzz/fuzz.py)."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ = os.path.join(ROOT, "bench", "fuzz")
sys.path.insert(0, FUZZ)

import minimise  # noqa: E402
from runner import Job, Runner  # noqa: E402


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    return Runner(str(tmp_path_factory.mktemp("fuzz")), timeout=2.0, mem_mb=1024, workers=2)


@pytest.mark.parametrize("tool,kind", [
    ("selftest-crash", "crash"), ("selftest-hang", "hang"), ("selftest-traceback", "traceback"),
    ("selftest-memory", "memory"), ("selftest-stray", "stray"), ("selftest-diagnostic", "diagnostic"),
    ("selftest-quote", "diagnostic"),
])
def test_classifier(runner, tool, kind):
    out = runner.run(Job(tool, ["{in}"], b"x", ".relay"))
    assert out.kind == kind, out.stderr
    assert out.is_finding == (kind != "diagnostic")


def test_classifier_on_real_tools(runner):
    ok = runner.run(Job("tvm-opt", ["{in}", "-o", "{out}"],
                        b"relay.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  return %x\n}\n", ".relay"))
    assert ok.kind == "ok", ok.stderr
    bad = runner.run(Job("tvm-opt", ["{in}", "-o", "{out}"], b"relay.func @f(%x: tensor<2xf32>) {\n  return %y\n}\n",
                         ".relay"))
    assert bad.kind == "diagnostic" and bad.located, bad.stderr


def test_signature_names_the_frame(runner):
    out = runner.run(Job("selftest-traceback", ["{in}"], b"x", ".relay"))
    assert out.signature.startswith("traceback: KeyError at runner.py:")


def test_minimiser_shrinks_to_the_trigger(runner):
    text = "".join(f"line {i} %v{i} = add(%a, %b)\n" for i in range(40)).replace("line 23", "line BOOM 23")
    job = Job("selftest-boom", ["{in}"], text.encode(), ".relay")
    out = runner.run(job)
    assert out.kind == "traceback"
    small = minimise.minimise_text(Runner(runner.root + "-min", timeout=2.0, workers=1), job, out.signature)
    assert b"BOOM" in small and len(small) < 12, small


def test_mutants_are_a_function_of_the_seed():
    import fuzz
    a = [(j.tool, j.args, j.data) for j, _, _ in fuzz.mutants(5, 30)]
    b = [(j.tool, j.args, j.data) for j, _, _ in fuzz.mutants(5, 30)]
    c = [(j.tool, j.args, j.data) for j, _, _ in fuzz.mutants(6, 30)]
    assert a == b and a != c
    assert {j.suffix for j, _, _ in fuzz.mutants(5, 300)} >= {".relay", ".te", ".tir", ".onnx"}


def test_fixed_slice_finds_nothing(tmp_path):
    """1000 mutants, fixed seed, every tool and pipeline: no traceback,
    internal error, crash, hang or stray write."""
    r = subprocess.run([sys.executable, os.path.join(FUZZ, "fuzz.py"), "--mutants", "1000", "--seed", "20261203",
                        "--check", "--quiet", "--out", str(tmp_path), "--timeout", "60"],
                       capture_output=True, text=True, timeout=900)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["mutants"] == 1000
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert not report["findings"]
