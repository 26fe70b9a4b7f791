"""The library pieces behind --verify-diagnostics and --split-input-file
(tvmd.ir.diagnostic_verifier, tvmd.parser.split), used by tvm-opt and
tvm-translate alike."""

from tvmd.ir import diagnostics as D
from tvmd.ir.diagnostic_verifier import DiagnosticVerifier, parse_expectations
from tvmd.ir.files import write_atomic, write_atomic_bytes
from tvmd.ir.location import FileLoc
from tvmd.parser.split import join_outputs, split_input


def test_annotation_targets():
    text = "\n".join([
        "a // expected-error {{on this line}}",          # 1
        "// expected-warning@+2 {{two below}}",          # 2 -> 4
        "// expected-note@below {{next}}",               # 3 -> 4
        "x // expected-remark@-3 {{three above}}",       # 4 -> 1
        "// expected-error@above {{prev}} expected-error@+1 {{second on a line}}",  # 5 -> 4, 6
    ])
    ex, bad = parse_expectations(text, "f", 10)
    assert bad == []
    assert [(e.severity, e.line, e.text) for e in ex] == [
        ("error", 11, "on this line"), ("warning", 14, "two below"), ("note", 14, "next"),
        ("remark", 11, "three above"), ("error", 14, "prev"), ("error", 16, "second on a line")]


def test_malformed_annotations():
    ex, bad = parse_expectations("// expected-error@+1 no braces\n// expected-error {{ }}\n", "f")
    assert ex == []
    assert [e.diagnostics[0].message for e in bad] == [
        "malformed expected-diagnostic: write expected-error {{text}}", "empty expected-diagnostic text"]
    assert [e.loc.line for e in bad] == [1, 2]


def fail_with(*diags):
    def fn():
        for sev, line, msg in diags:
            if sev != "error":
                D.emit(sev, FileLoc("f", line, 1), msg)
        errors = [D.Diagnostic("error", FileLoc("f", line, 1), msg) for sev, line, msg in diags if sev == "error"]
        if errors:
            raise D.DiagnosticError(errors)
        return "out"
    return fn


def messages(failures):
    return [e.diagnostics[0].message for e in failures]


def test_verifier_matches_and_reports():
    text = "x\n// expected-error@-1 {{bad thing}}\n// expected-warning@+1 {{careful}}\ny\n"
    v = DiagnosticVerifier(text, "f")
    assert v.run(fail_with(("warning", 4, "be careful here"), ("error", 1, "a bad thing happened"))) is None
    assert v.check() == []

    v = DiagnosticVerifier(text, "f")
    assert v.run(fail_with(("warning", 4, "be careful here"))) == "out"
    assert messages(v.check()) == ['expected error "bad thing" was not produced']

    v = DiagnosticVerifier(text, "f")
    v.run(fail_with(("warning", 4, "careful"), ("error", 1, "bad thing"), ("error", 4, "surprise")))
    assert messages(v.check()) == ["unexpected error: surprise"]

    # severity, line and file all have to match
    for sev, line, fname in (("warning", 1, "f"), ("error", 2, "f"), ("error", 1, "g")):
        v = DiagnosticVerifier("x // expected-error {{bad}}\n", "f")
        v.add([D.Diagnostic(sev, FileLoc(fname, line, 1), "bad")])
        assert messages(v.check()) == [f"unexpected {sev}: bad", 'expected error "bad" was not produced']


def test_one_diagnostic_consumes_one_expectation():
    v = DiagnosticVerifier("x // expected-error {{bad}} expected-error {{bad}}\n", "f")
    v.add([D.Diagnostic("error", FileLoc("f", 1, 1), "bad")])
    assert messages(v.check()) == ['expected error "bad" was not produced']


def test_split_input_keeps_line_numbers():
    text = "a\nb\n// -----\nc\n// ----- trailing words\n\nd"
    chunks = split_input(text)
    assert chunks == [("a\nb\n", 0), ("c\n", 3), ("\nd", 5)]
    for chunk, line0 in chunks:
        for i, line in enumerate(chunk.split("\n")):
            if line:
                assert text.split("\n")[line0 + i] == line
    assert split_input("no marker") == [("no marker", 0)]
    assert join_outputs(["x\n", "y\n"]) == "x\n// -----\ny\n"


def test_write_atomic(tmp_path):
    p = tmp_path / "out.txt"
    p.write_text("old")
    p.chmod(0o640)
    write_atomic(str(p), "new ü")
    assert p.read_text(encoding="utf-8") == "new ü"
    assert p.stat().st_mode & 0o777 == 0o640
    write_atomic_bytes(str(tmp_path / "b.bin"), b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["b.bin", "out.txt"]   # no temporary left over
