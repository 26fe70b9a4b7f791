"""-mcpu and -mattr are checked against LLVM's own tables before codegen
(issue 9): LLVM's own handling of a bad CPU is `LLVM ERROR` and exit, and
-mattr=-64bit-mode on x86-64 is SIGABRT."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from tools import run_tool  # noqa: E402

KERNEL = os.path.join(os.path.dirname(__file__), "..", "test", "lit", "translate", "Inputs", "kernel.tir")
X86 = "-mtriple=x86_64-unknown-linux-gnu"


def translate(*args, cwd=None):
    return run_tool("tvm-translate", "tvmd.tools.translate_main", args, cwd=cwd)


def assert_target_error(r, target, word, message):
    """exit 1, no traceback, no LLVM ERROR, the error at `word` of the target."""
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    assert "LLVM ERROR" not in r.stderr, r.stderr
    assert "is not a recognized" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].startswith("<command line>:1:"), r.stderr
    assert message in lines[0], r.stderr
    col = int(lines[0].split(":")[2])
    echo = lines[1]
    arg = f"'--target={target}'"
    assert arg in echo, r.stderr
    assert col - 1 == echo.index(arg) + len("'--target=") + target.index(word), r.stderr
    assert lines[2] == " " * (col - 1) + "^", r.stderr


@pytest.mark.parametrize("emit", ["llvm", "asm", "obj"])
def test_unknown_cpu(tmp_path, emit):
    target = "llvm -mcpu=bogus"
    out = tmp_path / "k.out"
    r = translate(KERNEL, f"--emit={emit}", "-o", str(out), f"--target={target}", cwd=str(tmp_path))
    assert_target_error(r, target, "bogus", "error: invalid target: unknown CPU 'bogus'")
    assert not out.exists()


def test_unknown_cpu_suggests():
    target = f"llvm {X86} -mcpu=skylak"
    r = translate(KERNEL, "--emit=asm", f"--target={target}")
    assert_target_error(r, target, "skylak", "unknown CPU 'skylak'")
    assert "did you mean 'skylake'" in r.stderr


@pytest.mark.parametrize("mattr,bad,message", [
    ("-64bit-mode", "-64bit-mode", "feature '-64bit-mode' cannot be used"),
    ("+avx2,-sse2", "-sse2", "feature '-sse2' cannot be used"),
    ("+32bit-mode", "+32bit-mode", "feature '+32bit-mode' cannot be used"),
    ("+avx2,+nosuchfeature", "+nosuchfeature", "unknown CPU feature 'nosuchfeature'"),
])
def test_bad_features(tmp_path, mattr, bad, message):
    target = f"llvm {X86} -mattr={mattr}"
    out = tmp_path / "k.o"
    r = translate(KERNEL, "--emit=obj", "-o", str(out), f"--target={target}", cwd=str(tmp_path))
    assert_target_error(r, target, bad, message)
    assert not out.exists()


def test_cpu_of_another_target():
    target = "llvm -mtriple=aarch64-linux-gnu -mcpu=skylake"
    r = translate(KERNEL, "--emit=asm", f"--target={target}")
    assert_target_error(r, target, "skylake", "unknown CPU 'skylake' for target 'aarch64-linux-gnu'")


@pytest.mark.parametrize("target", [
    f"llvm {X86} -mcpu=skylake -mattr=+avx2,-avx512f",
    "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1 -mattr=+sve",
    "llvm -mcpu=native",
])
def test_known_cpus_and_features_compile(target):
    r = translate(KERNEL, "--emit=asm", f"--target={target}")
    assert r.returncode == 0, r.stderr
    assert ".globl" in r.stdout


def test_library_api_validates_too():
    """A target built without the parser is checked when its machine is made."""
    from tvmd.backend.llvm.target import LLVMTarget
    from tvmd.backend.spec import TargetError, parse_target
    with pytest.raises(TargetError, match="unknown CPU 'bogus'"):
        LLVMTarget(None, "bogus", "").target_machine()
    with pytest.raises(TargetError, match="-64bit-mode") as e:
        parse_target(f"llvm {X86} -mattr=+avx2,-64bit-mode")
    assert e.value.offset == len(f"llvm {X86} -mattr=+avx2,")


def test_parse_help():
    from tvmd.backend.llvm.target import parse_help
    text = ("Available CPUs for this target:\n\n  alderlake  - Select the alderlake processor.\n"
            "  x86-64     - Select the x86-64 processor.\n\n"
            "Available features for this target:\n\n  avx2  - Enable AVX2 instructions.\n\n"
            "Use +feature to enable a feature, or -feature to disable it.\n")
    assert parse_help(text) == ({"alderlake", "x86-64"}, {"avx2"})
    assert parse_help("") is None
