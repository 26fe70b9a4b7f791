"""Splat constants stay splats; materialising a constant past
TVMD_MAX_CONSTANT_BYTES is a located error naming the op.

A splat (``dense<1.0> : tensor<...>``) is held as a 0-stride view of one
element (ir/attributes.py), so parsing, printing, hashing, comparing and
folding it cost one element whatever its size.  Where a constant must be in
memory (fold-constant evaluating an op, the executor binding it) the size is
checked first, from the type.
"""

import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from tvmd.ir import types as T
from tvmd.ir.attributes import DenseAttr, check_constant_size, dense_from_literal
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.ir.pass_manager import PassContext, PassManager, instantiate, parse_pipeline
from tvmd.ir.printer import print_module
from tvmd.ir.registry import get_pass_class
from tvmd.parser import parse_module

HUGE = "tensor<1x4294967296xf32>"     # 16 GiB if it were materialised
MB = 1 << 20


def _fold(text):
    m = parse_module(text, "t.relay")
    get_pass_class("fold-constant")().run(m, PassContext())   # DiagnosticErrors unwrapped
    return m


def _constants(m):
    return [op.attributes["value"] for op in m.walk() if op.name == "relay.constant"]


def _peak(fn):
    """(fn(), the peak bytes traced while it ran)."""
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _tool(name, path, *args, limit=None):
    env = dict(os.environ)
    env.pop("TVMD_MAX_CONSTANT_BYTES", None)
    if limit is not None:
        env["TVMD_MAX_CONSTANT_BYTES"] = str(limit)
    mod = {"tvm-opt": "tvmd.tools.opt_main", "tvm-run": "tvmd.tools.run_main"}[name]
    return subprocess.run([sys.executable, "-m", mod, str(path), *args], capture_output=True, text=True,
                          env=env, timeout=300)


RETURN_SPLAT = """relay.func @main() -> {t} {{
  %c = constant dense<1.0> : {t}
  return %c
}}
"""


# -- representation, printing, round trip -----------------------------------

def test_large_splat_prints_inline_and_round_trips():
    text = RETURN_SPLAT.format(t="tensor<1000x1000xf32>")
    out = print_module(parse_module(text))
    assert "constant dense<1.0> : tensor<1000x1000xf32>" in out
    assert "dialect_resources" not in out and len(out) < 300     # was 8,000,220 bytes
    again = parse_module(out)
    (a,) = _constants(again)
    assert a.is_splat() and not any(a.array.strides)
    assert print_module(again) == out


def test_huge_splat_parses_prints_and_compares_without_allocating():
    text = RETURN_SPLAT.format(t=HUGE)

    def work():
        m1, m2 = parse_module(text), parse_module(text)
        out = print_module(m1)
        (a,), (b,) = _constants(m1), _constants(m2)
        return out, a, b, a == b, hash(a) == hash(b), a.is_splat()

    (out, a, b, eq, same_hash, splat), peak = _peak(work)
    assert peak < 16 * MB
    assert eq and same_hash and splat and len(out) < 200
    assert a.array.shape == (1, 4294967296)
    assert a.nbytes == 4 << 32


def test_materialised_splat_equals_the_view_and_hashes_alike():
    t = T.parse_type("tensor<3x4xf32>")
    full = DenseAttr(np.full((3, 4), 2.5, np.float32), t)
    view = dense_from_literal(2.5, t)
    assert full.is_splat() and view.is_splat()
    assert full == view and hash(full) == hash(view)
    assert view != dense_from_literal(3.5, t)
    assert DenseAttr.splat(2.5, t) == view


def test_splat_is_bitwise():
    """[0.0, -0.0] is not a splat (printing it as dense<0.0> would lose the
    sign); an all-NaN tensor is one."""
    t = T.parse_type("tensor<2xf32>")
    assert not DenseAttr(np.array([0.0, -0.0], np.float32), t).is_splat()
    assert DenseAttr(np.array([np.nan, np.nan], np.float32), t).is_splat()
    text = RETURN_SPLAT.format(t="tensor<2xf32>").replace("dense<1.0>", "dense<[0.0, -0.0]>")
    assert "dense<[0.0, -0.0]>" in print_module(parse_module(text))


def test_splat_view_is_private_and_converted_once():
    one = np.array([7], np.int64)
    view = np.broadcast_to(one, (1000, 1000))
    a = DenseAttr(view, T.parse_type("tensor<1000x1000xf32>"))
    one[0] = 9                        # the caller's buffer: not the attribute's
    assert a.array.dtype == np.float32 and a.array.flat[0] == 7.0
    assert not any(a.array.strides) and a.array.flags.writeable is False


# -- fold-constant -----------------------------------------------------------

def test_fold_elementwise_of_splats_stays_a_splat():
    m = _fold("""relay.func @main(%x: tensor<1000x1000xf32>) -> tensor<1000x1000xf32> {
  %c = constant dense<1.0> : tensor<1000x1000xf32>
  %d = add(%c, %c)
  %e = add(%d, %x)
  return %e
}
""")
    (a,) = _constants(m)
    assert a.is_splat() and not any(a.array.strides) and a.array.flat[0] == 2.0
    out = print_module(m)
    assert "constant dense<2.0> : tensor<1000x1000xf32>" in out and len(out) < 300   # was 8,000,265


def test_fold_huge_splat_chain_costs_nothing():
    text = f"""relay.func @main() -> {HUGE.replace('f32', 'f16')} {{
  %c = constant dense<1.0> : {HUGE}
  %d = add(%c, %c)
  %e = exp(%d)
  %f = cast(%e) {{dtype = "float16"}}
  return %f
}}
"""
    m, peak = _peak(lambda: _fold(text))
    assert peak < 16 * MB
    (a,) = _constants(m)
    assert a.is_splat() and a.array.dtype == np.float16
    assert a.array.flat[0] == np.float16(np.exp(np.float32(2.0)))


def test_fold_splat_with_non_splat_is_exact():
    m = _fold("""relay.func @main() -> tensor<2x3xi32> {
  %c = constant dense<5> : tensor<2x3xi32>
  %v = constant dense<[1, 2, 3]> : tensor<3xi32>
  %d = subtract(%c, %v)
  return %d
}
""")
    (a,) = _constants(m)
    np.testing.assert_array_equal(a.array, [[4, 3, 2], [4, 3, 2]])


@pytest.mark.parametrize("expr,ty", [
    ("add(%a, %b)", "f32"), ("divide(%a, %b)", "i32"), ("divide(%b, %z)", "i32"),
    ("power(%a, %b)", "f32"), ("maximum(%a, %z)", "i8"), ("exp(%a)", "f32"), ("sigmoid(%b)", "f16"),
    ("cast(%a) {dtype = \"int8\"}", "f32"), ("where(%z, %a, %b)", "bool"),
])
def test_fold_splat_path_matches_full_evaluation(expr, ty):
    """The splat path (one element of each operand) gives the value the
    full evaluation gives, bit for bit."""
    from tvmd.dialects.relay.interpreter import evaluate_op
    from tvmd.dialects.relay.passes.fold_constant import splat_value
    et = {"bool": "i1", "f16": "f16", "f32": "f32", "i32": "i32", "i8": "i8"}[ty]
    vals = {"bool": ("true", "false", "false"), "i8": ("100", "-7", "0")}.get(ty, ("3", "-2", "0"))
    if et.startswith("f"):
        vals = tuple(v + ".5" for v in vals[:2]) + ("0.0",)
    t = f"tensor<2x3x{et}>"
    m = parse_module(f"""relay.func @main() {{
  %a = constant dense<{vals[0]}> : {t}
  %b = constant dense<{vals[1]}> : tensor<3x{et}>
  %z = constant dense<{vals[2]}> : {t}
  %r = {expr}
  return %r
}}
""")
    PassManager(instantiate(parse_pipeline("infer-type"), get_pass_class)).run(m)
    op = next(o for o in m.walk() if o.results and o.results[0].name == "r")
    consts = [v.defining_op() for v in op.operands]
    fast = splat_value(op, consts)
    assert isinstance(fast, np.ndarray) and not any(fast.strides)
    full = evaluate_op(op, [np.ascontiguousarray(c.attributes["value"].array) for c in consts])
    assert fast.dtype == full.dtype and fast.shape == full.shape
    assert fast.tobytes() == full.tobytes()


def test_fold_past_the_limit_is_an_error_at_the_op(monkeypatch):
    monkeypatch.setenv("TVMD_MAX_CONSTANT_BYTES", "1000")
    with pytest.raises(DiagnosticError) as e:
        _fold("""relay.func @main() -> tensor<2x1000xf32> {
  %c = constant dense<1.0> : tensor<1x1000xf32>
  %v = constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %d = add(%c, %v)
  return %d
}
""")
    msg = e.value.diagnostics[0].message
    assert msg == ("fold-constant: folding 'relay.add' would materialise 8000 bytes (tensor<2x1000xf32>), "
                   "more than the limit of 1000 (TVMD_MAX_CONSTANT_BYTES)")
    loc = e.value.loc
    assert (loc.line, loc.col) == (4, 8)


def test_check_constant_size_counts_tuples(monkeypatch):
    monkeypatch.setenv("TVMD_MAX_CONSTANT_BYTES", "100")
    check_constant_size(T.parse_type("tensor<25xf32>"), None, "x")
    with pytest.raises(DiagnosticError, match="104 bytes"):
        check_constant_size(T.parse_type("tuple<tensor<25xf32>, tensor<1xf32>>"), None, "x")


# -- the tools: rc 1, a located error, never a traceback ----------------------

def test_tvm_opt_limit_error(tmp_path):
    p = tmp_path / "big.relay"
    p.write_text("""relay.func @main() -> tensor<2x1000000xf32> {
  %c = constant dense<1.0> : tensor<1x1000000xf32>
  %v = constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %d = add(%c, %v)
  return %d
}
""")
    r = _tool("tvm-opt", p, "--fold-constant", limit=1000)
    assert r.returncode == 1
    assert f"{p}:4:8: error: fold-constant: folding 'relay.add' would materialise 8000000 bytes" in r.stderr
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr
    ok = _tool("tvm-opt", p)                           # printing the splat costs nothing
    assert ok.returncode == 0 and "dense<1.0> : tensor<1x1000000xf32>" in ok.stdout


def test_tvm_run_binding_past_the_limit(tmp_path):
    p = tmp_path / "ret.relay"
    p.write_text(RETURN_SPLAT.format(t="tensor<1000x1000xf32>"))
    r = _tool("tvm-run", p, limit=1000)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{p}:2:8: error: binding 'relay.constant' would materialise 4000000 bytes" in r.stderr
    assert "Traceback" not in r.stderr


# -- resource blobs in input files -------------------------------------------

RESOURCE = """relay.func @main() -> tensor<4xf32> {{
  %c = constant dense_resource<w> : tensor<4xf32>
  return %c
}}

{{-#
  dialect_resources: {{
    builtin: {{
      w: "{blob}"
    }}
  }}
#-}}
"""


@pytest.mark.parametrize("blob,where,msg", [
    ("0x040000000000803F0000803F", (2, 32), "resource 'w' holds 8 bytes but tensor<4xf32> needs 16"),
    ("0x040000000000803F0000803Z", (9, 10), "non-hex character"),
    ("0x0400", (9, 10), "4-byte alignment + hex data"),
])
def test_bad_resource_blob_is_located(blob, where, msg):
    with pytest.raises(DiagnosticError) as e:
        parse_module(RESOURCE.format(blob=blob), "r.relay")
    assert msg in e.value.diagnostics[0].message
    assert (e.value.loc.line, e.value.loc.col) == where
