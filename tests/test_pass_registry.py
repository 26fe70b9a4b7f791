"""The pass registry and what each pass class declares: its name, summary,
anchor op (OP) and options with help; docs/passes.md covering every pass
and option; and nesting in pipelines (MLIR's OperationPass<OpT>): a pass
runs under an anchor it declares, per op, with the same result as
un-nested, and nesting it anywhere else is an error at its position."""

import dataclasses
import os
import re
import subprocess
import sys

import pytest

from tvmd.ir.pass_manager import (ANY, MODULE, ModulePass, PassContext, PassManager, PassOptionError,
                                  instantiate, option, parse_pipeline)
from tvmd.ir.printer import print_module
from tvmd.ir.registry import HIDDEN_PASSES, PASSES, get_op_class, get_pass_class
from tvmd.parser import parse_module

ROOT = os.path.join(os.path.dirname(__file__), "..")
DOCS = os.path.join(ROOT, "docs", "passes.md")
TIR_LIT = os.path.join(ROOT, "test", "lit", "tir")

ALL = sorted(PASSES)
LISTED = [n for n in ALL if n not in HIDDEN_PASSES]


def pipeline(text):
    return instantiate(parse_pipeline(text), get_pass_class)


# -- what each class declares ---------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_registry_name_is_the_class_name(name):
    cls = get_pass_class(name)
    assert issubclass(cls, ModulePass)
    assert cls.NAME == name
    assert PASSES[name][1] == cls.__name__


@pytest.mark.parametrize("name", ALL)
def test_every_pass_has_a_summary_an_anchor_and_option_help(name):
    cls = get_pass_class(name)
    s = cls.summary()
    assert s and "\n" not in s and len(s) <= 100, (name, s)
    for op in cls.anchor_ops():
        assert op == ANY or get_op_class(op) is not None, f"{name} runs on unknown op '{op}'"
    for opt, typ, default, help_ in cls.options_help():
        assert help_, f"option '{opt}' of pass '{name}' has no help text"
        assert typ and "typing" not in typ, (name, opt, typ)
    if cls.EXTRA_OPTIONS:
        assert cls.EXTRA_OPTIONS_HELP, f"pass '{name}' takes KEY=VALUE entries but says nothing about them"


@pytest.mark.parametrize("name", ALL)
def test_a_function_pass_implements_run_on_and_a_module_pass_run(name):
    cls = get_pass_class(name)
    own = lambda m: any(m in vars(c) for c in cls.__mro__ if c is not ModulePass)  # noqa: E731
    if cls.is_module_pass():
        assert own("run"), name
    else:
        assert own("run_on"), name


def test_option_fields_carry_help_and_copy_mutable_defaults():
    @dataclasses.dataclass
    class P(ModulePass):
        """Do a thing.

        More words."""
        NAME = "p"
        OP = "tir.func"
        n: int = option(3, "how many")
        xs: list[int] = option([1, 2], "which")

    assert P.summary() == "Do a thing"
    assert P.options_help() == [("n", "int", 3, "how many"), ("xs", "list<int>", [1, 2], "which")]
    a, b = P(), P()
    a.xs.append(3)
    assert b.xs == [1, 2]
    assert P.runs_on("tir.func") and not P.runs_on("relay.func")
    assert P.from_options("n=5 xs=4,5") == P(n=5, xs=[4, 5])

    @dataclasses.dataclass
    class Q(ModulePass):
        NAME = "q"
    assert Q.summary() == ""            # not dataclass's generated "Q()"
    assert Q.anchor_ops() == (MODULE,) and Q.is_module_pass()


# -- docs ---------------------------------------------------------------------------------------

def _doc_text_for(doc, name):
    """The section headed --name (down to the next heading of its level or
    above) plus every table row naming `--name`."""
    lines = doc.splitlines()
    out = [ln for ln in lines if ln.startswith("|") and f"`--{name}`" in ln]
    for i, ln in enumerate(lines):
        m = re.match(r"(#+) --" + re.escape(name) + r"\b", ln)
        if not m:
            continue
        level = len(m.group(1))
        for ln2 in lines[i + 1:]:
            h = re.match(r"(#+) ", ln2)
            if h and len(h.group(1)) <= level:
                break
            out.append(ln2)
    return "\n".join(out)


@pytest.mark.parametrize("name", LISTED)
def test_docs_describe_every_pass_and_its_options(name):
    doc = open(DOCS, encoding="utf-8").read()
    table = doc.split("\n## ", 1)[0]
    assert f"| `--{name}` |" in table, f"--{name} is missing from the table at the top of docs/passes.md"
    text = _doc_text_for(doc, name)
    assert re.search(r"#+ --" + re.escape(name) + r"\b", doc) or text, f"--{name} has no section"
    for opt, *_ in get_pass_class(name).options_help():
        assert f"`{opt}" in text, f"option '{opt}' of --{name} is not in its docs/passes.md section"


def test_docs_table_holds_only_registered_passes():
    table = open(DOCS, encoding="utf-8").read().split("\n## ", 1)[0]
    named = set(re.findall(r"^\| `--([\w-]+)`", table, re.M))
    assert named == set(LISTED)
    # the "runs on" column says what the class declares
    for name, where in re.findall(r"^\| `--([\w-]+)` \| ([^|]+) \|", table, re.M):
        ops = get_pass_class(name).anchor_ops()
        want = "module" if ops == (MODULE,) else "any" if ANY in ops else ", ".join(ops)
        assert where.strip() == want, name


# -- nesting ------------------------------------------------------------------------------------

def _chunks(path):
    text = open(path, encoding="utf-8").read()
    return [c for c in re.split(r"^// -----.*$", text, flags=re.M) if "tir.func" in c]


def _run(text, pipe):
    m = parse_module(text, "t.tir")
    pm = PassManager(pipeline(pipe))
    pm.run(m)
    return print_module(m), pm.ctx.stats


def test_nested_tir_unroll_runs_per_function_and_matches_the_flat_pass(monkeypatch):
    from tvmd.dialects.tir.passes.unroll import Unroll
    seen = []
    real = Unroll.run_on

    def spy(self, func, ctx):
        seen.append(func.sym_name)
        return real(self, func, ctx)

    monkeypatch.setattr(Unroll, "run_on", spy)
    chunks = _chunks(os.path.join(TIR_LIT, "unroll.tir"))
    assert len(chunks) > 1
    for chunk in chunks:
        funcs = re.findall(r"^tir\.func @(\w+)", chunk, re.M)
        seen.clear()
        flat, flat_stats = _run(chunk, "tir-unroll")
        assert seen == funcs
        seen.clear()
        nested, nested_stats = _run(chunk, "builtin.module(tir.func(tir-unroll))")
        assert seen == funcs                 # once per function, in order
        assert nested == flat
        assert nested_stats == flat_stats


TIR_FILES = ["unroll.tir", "vectorize.tir", "loop_partition.tir", "storage_rewrite.tir", "flatten_buffer.tir",
             "remove_no_op.tir", "double_buffer.tir", "lower_intrin.tir", "simplify.tir"]


@pytest.mark.parametrize("name", [n for n in ALL if get_pass_class(n).anchor_ops() == ("tir.func",)])
def test_every_tir_function_pass_nests_with_the_flat_result(name):
    ran = 0
    for f in TIR_FILES:
        for chunk in _chunks(os.path.join(TIR_LIT, f)):
            try:
                flat, _ = _run(chunk, name)
            except Exception:
                continue          # chunks written to fail (or for another pass's options)
            nested, _ = _run(chunk, f"builtin.module(tir.func({name}))")
            assert nested == flat, (name, f)
            ran += 1
    assert ran


def _error(text):
    with pytest.raises(PassOptionError) as e:
        pipeline(text)
    return str(e.value), e.value.offset


def test_a_tir_pass_under_relay_func_is_an_error_at_the_pass():
    text = "builtin.module(relay.func(cse,tir-unroll{max-step=4}))"
    msg, off = _error(text)
    assert msg == ("pass 'tir-unroll' runs on 'tir.func' ops and cannot be nested under 'relay.func'; "
                   "write 'tir.func(tir-unroll)'")
    assert text[off:].startswith("tir-unroll")


@pytest.mark.parametrize("name", [n for n in LISTED if get_pass_class(n).is_module_pass()])
def test_a_module_pass_under_a_function_anchor_is_an_error(name):
    text = f"relay.func({name})"
    msg, off = _error(text)
    assert f"pass '{name}' runs on the whole module" in msg
    assert off == text.index(name)


def test_anchors_come_from_the_passes():
    msg, off = _error("builtin.module(tir.for(tir-unroll))")
    assert off == len("builtin.module(")
    anchors = {op for n in ALL for op in get_pass_class(n).anchor_ops() if op != ANY} | {MODULE}
    assert msg == f"'tir.for' is not an op a pipeline can nest on (one of {', '.join(sorted(anchors))})"
    assert {"relay.func", "te.func", "tir.func"} <= anchors
    msg, _ = _error("relay.func(tir.func(tir-unroll))")
    assert "'tir.func' cannot be nested under 'relay.func'" in msg


def test_op_agnostic_passes_nest_anywhere():
    for text in ("relay.func(canonicalize)", "tir.func(canonicalize,test-fail)", "canonicalize"):
        assert pipeline(text)
    [(anchor, p)] = pipeline("tir.func(canonicalize{max-iterations=3})")
    assert anchor == "tir.func" and p.max_iterations == 3


def test_a_function_pass_at_the_top_runs_on_every_function_of_its_kind():
    text = """tir.func @a(%A: memref<2xf32>, %x: f32) {
  tir.for %i = 0 to 2 unrolled {
    tir.store %x, %A[%i] : f32
  }
}
tir.func @b(%A: memref<3xf32>, %x: f32) {
  tir.for %i = 0 to 3 unrolled {
    tir.store %x, %A[%i] : f32
  }
}
"""
    from tvmd.dialects.tir.passes.unroll import Unroll
    m = parse_module(text, "t.tir")
    ctx = PassContext()
    Unroll().run(m, ctx)
    assert ctx.stats["tir-unroll"]["loops-unrolled"] == 2
    assert "tir.for" not in print_module(m)


def test_the_command_line_points_at_the_misplaced_pass(tmp_path):
    p = tmp_path / "k.tir"
    p.write_text("tir.func @f(%A: memref<2xf32>) {\n}\n")
    arg = "--pass-pipeline=builtin.module(relay.func(tir-unroll))"
    r = subprocess.run([sys.executable, "-m", "tvmd.tools.opt_main", str(p), arg],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    first, line, caret = r.stderr.splitlines()[:3]
    assert "error: pass 'tir-unroll' runs on 'tir.func' ops and cannot be nested under 'relay.func'" in first
    assert line[caret.index("^"):].startswith("tir-unroll")
    r = subprocess.run([sys.executable, "-m", "tvmd.tools.opt_main", str(p),
                        "--pass-pipeline=builtin.module(tir.func(tir-unroll))"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_list_passes_shows_summary_anchor_and_options():
    r = subprocess.run([sys.executable, "-m", "tvmd.tools.opt_main", "--list-passes"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for name in LISTED:
        cls = get_pass_class(name)
        assert f"--{name}: {cls.summary()}\n" in out
        for opt, typ, _, _ in cls.options_help():
            assert f"{opt}=<{typ}>" in out
    assert "--test-fail" not in out
    assert "runs on: tir.func" in out and "runs on: relay.func" in out and "runs on: any op" in out
    assert "max-depth=<int>            the most ops in one fused group (default: 256)" in out


def test_help_lists_every_listed_pass_without_importing_them():
    code = ("import sys, io; from tvmd.tools.opt_main import print_help; print_help(io.StringIO()); "
            "print(sorted(m for m in sys.modules if '.passes' in m or 'conversion' in m))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
    r = subprocess.run([sys.executable, "-m", "tvmd.tools.opt_main", "--help"],
                       capture_output=True, text=True, timeout=60)
    for name in LISTED:
        assert f"--{name}" in r.stdout
