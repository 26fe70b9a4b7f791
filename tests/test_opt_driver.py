"""tvm-opt as a user meets it: exit codes, diagnostics, outputs, flags."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from tools import tvm_opt  # noqa: E402

GOOD = """relay.func @main(%x: tensor<4xf32>) {
  %0 = nn.relu(%x)
  return %0
}
"""


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def assert_clean_error(r, where=None):
    assert r.returncode == 1, r
    assert "Traceback" not in r.stderr, r.stderr
    first = r.stderr.splitlines()[0]
    assert ": error: " in first, r.stderr
    if where:
        assert first.startswith(where), r.stderr


def test_help_lists_passes_and_flags():
    r = tvm_opt("--help")
    assert r.returncode == 0
    for s in ("--fuse-ops", "--convert-layout", "--pass-pipeline", "--print-ir-after-all", "--verify-diagnostics"):
        assert s in r.stdout


def test_reads_stdin_and_writes_stdout():
    r = tvm_opt("-", stdin=GOOD)
    assert r.returncode == 0, r.stderr
    assert "%0 = nn.relu(%x) : tensor<4xf32>" in r.stdout


def test_output_file_is_written_and_never_clobbered_on_error(tmp_path):
    src = write(tmp_path, "in.relay", GOOD)
    out = str(tmp_path / "out.relay")
    assert tvm_opt(src, "-o", out).returncode == 0
    first = open(out).read()
    assert "nn.relu" in first
    bad = write(tmp_path, "bad.relay", GOOD.replace("%x)", "%y)"))
    r = tvm_opt(bad, "-o", out)
    assert_clean_error(r, bad)
    assert open(out).read() == first          # the old output survives
    r = tvm_opt(src, "-o", src)               # in place is allowed, and atomic
    assert r.returncode == 0 and "tensor<4xf32>" in open(src).read()
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tvmd-")]


@pytest.mark.parametrize("args,at,msg", [
    (["--fuse-opz"], "--fuse-opz", "unknown option or pass '--fuse-opz'; did you mean '--fuse-ops'?"),
    (["--pass-pipeline=builtin.module(nonexistent-pass)"], "nonexistent-pass",
     "'nonexistent-pass' does not refer to a registered pass"),
    (["--pass-pipeline=fuse-ops{max-depht=3}"], "max-depht", "pass 'fuse-ops' has no option 'max-depht'"),
    (["--fuse-ops=max-depth=abc"], "max-depth=abc", "expected an integer"),
    (["--pass-pipeline=fuse-ops,,dce"], ",dce", "unexpected ',' in pass pipeline"),
    (["-o"], "-o", "'-o' needs a value"),
])
def test_command_line_errors_point_into_the_command_line(args, at, msg):
    r = tvm_opt("-", *args, stdin=GOOD)
    assert_clean_error(r, "<command line>:1:")
    first, line, caret = r.stderr.splitlines()[:3]
    assert msg in first
    col = int(first.split(":")[2])
    assert caret.index("^") == col - 1
    assert line[col - 1:].startswith(at), r.stderr


def test_missing_input_file():
    r = tvm_opt("/no/such/file.relay")
    assert_clean_error(r, "<command line>:1:9:")
    assert "no such file" in r.stderr


@pytest.mark.parametrize("content", [b"\xff\xfe\x00junk\x80", b"relay.func @f(%x: tensor<4xf32>) {\n\x00\x01", b"{" * 20000,
                                     b"relay.func", b"%", b"\"unterminated", b"// only a comment\n"])
def test_junk_gets_a_diagnostic_or_parses(tmp_path, content):
    p = tmp_path / "junk.relay"
    p.write_bytes(content)
    r = tvm_opt(str(p))
    assert "Traceback" not in r.stderr
    if r.returncode != 0:
        assert r.returncode == 1
        assert r.stderr.startswith(str(p) + ":"), r.stderr


def test_split_input_file_keeps_going_and_reports_real_lines(tmp_path):
    text = GOOD + "// -----\n" + GOOD.replace("%x)", "%q)") + "// -----\n" + GOOD
    src = write(tmp_path, "s.relay", text)
    r = tvm_opt(src, "--split-input-file")
    assert r.returncode == 1
    assert r.stderr.startswith(f"{src}:7:16: error: use of undeclared SSA value name '%q'")
    assert r.stdout.count("relay.func @main") == 2
    assert "// -----" in r.stdout


def test_verify_diagnostics_checks_the_annotations(tmp_path):
    text = """relay.func @f(%x: tensor<4xf32>, %y: tensor<5xf32>) {
  // expected-error@+1 {{cannot be broadcast together}}
  %0 = add(%x, %y)
  return %0
}
// -----
relay.func @g(%x: tensor<4xf32>) {
  %0 = nn.relu(%z) // expected-error {{undeclared SSA value name '%z'}}
  return %0
}
"""
    src = write(tmp_path, "v.relay", text)
    r = tvm_opt(src, "--split-input-file", "--verify-diagnostics")
    assert r.returncode == 0, r.stderr
    wrong = write(tmp_path, "w.relay", text.replace("cannot be broadcast together", "no such message"))
    r = tvm_opt(wrong, "--split-input-file", "--verify-diagnostics")
    assert r.returncode == 1
    assert "unexpected error: 'relay.add' op shapes [4] and [5] cannot be broadcast" in r.stderr
    assert 'expected error "no such message" was not produced' in r.stderr
    missing = write(tmp_path, "m.relay", "// expected-error@+1 {{never}}\n" + GOOD)
    r = tvm_opt(missing, "--verify-diagnostics")
    assert r.returncode == 1 and 'expected error "never" was not produced' in r.stderr


def test_print_generic_and_debuginfo(tmp_path):
    src = write(tmp_path, "g.relay", GOOD)
    r = tvm_opt(src, "--print-generic")
    assert '"relay.nn.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>' in r.stdout
    r = tvm_opt(src, "--print-debuginfo")
    assert f'loc("{src}":2:8)' in r.stdout


def test_timing_report(tmp_path):
    src = write(tmp_path, "t.relay", GOOD)
    r = tvm_opt(src, "--timing")
    assert r.returncode == 0
    assert "Total Execution Time" in r.stderr and "Parser" in r.stderr and "Printer" in r.stderr
