"""Random legal schedules give the numbers of the unscheduled compute.

Hypothesis draws small computes (elementwise, a reduction, a producer read
through a window, a clamped window or transposed by its consumer) and a
schedule for them: splits by factor or nparts (dividing or not), fuses of
adjacent axes, reorders, loop kinds, and for the producer compute_inline,
compute_root or compute_at at any leaf of the consumer.  The schedule is
written as te text, so the parser is in the loop too.  The result after
--apply-schedule (the te loop executor) and after --lower-te-to-tir (the
tir interpreter) must equal the te interpreter's on the unscheduled
function.

A second test adds the stage ops: cache_read of the input, cache_write of
the consumer (its local stage computed at root or at a leaf of the copy)
and rfactor of a reduce axis or of one part of its split, each followed by
random schedules of the stages they make.

The example counts are small by default; TVMD_FUZZ=1 makes them long.
"""

import os

import numpy as np
from hypothesis import given, settings, strategies as st

from tvmd.conversion.te_to_tir.apply_schedule import apply_to_func
from tvmd.conversion.te_to_tir.lower import lower_func
from tvmd.dialects.te.interpreter import run
from tvmd.dialects.tir.interpreter import run as run_tir
from tvmd.ir.printer import print_module
from tvmd.ir.verifier import verify
from tvmd.parser import parse_module


def computes(kind, m, n):
    """(parameters, stage text, producer name or None, consumer name, consumer axes)."""
    if kind == "elementwise":
        return ([("A", f"{m}x{n}")], f"""
  %C = te.compute [%i, %j] : tensor<{m}x{n}xf32> {{
    %a = te.read %A[%i, %j] : f32
    %e = te.intrin "exp"(%a) : f32
    %s = arith.addf %a, %e : f32
    yield %s
  }}""", None, (["i", "j"], []))
    if kind == "reduction":
        return ([("A", f"{m}x5"), ("W", f"{n}x5")], f"""
  %C = te.compute [%i, %j] reduce [%k: 5] "sum" : tensor<{m}x{n}xf32> {{
    %a = te.read %A[%i, %k] : f32
    %w = te.read %W[%j, %k] : f32
    %p = arith.mulf %a, %w : f32
    yield %p
  }}""", None, (["i", "j"], ["k"]))
    if kind == "window":
        return ([("A", f"{m}x{n + 2}"), ("K", "3")], f"""
  %P = te.compute [%i, %j] : tensor<{m}x{n + 2}xf32> {{
    %a = te.read %A[%i, %j] : f32
    %e = te.intrin "tanh"(%a) : f32
    yield %e
  }}
  %C = te.compute [%i, %j] reduce [%r: 3] "max" : tensor<{m}x{n}xf32> {{
    %q = arith.addi %j, %r : index
    %p = te.read %P[%i, %q] : f32
    %k = te.read %K[%r] : f32
    %s = arith.mulf %p, %k : f32
    yield %s
  }}""", "P", (["i", "j"], ["r"]))
    if kind == "clamp":   # a window clamped to the producer's edges
        return ([("A", f"{m}x{n + 2}")], f"""
  %P = te.compute [%i, %j] : tensor<{m}x{n + 2}xf32> {{
    %a = te.read %A[%i, %j] : f32
    %e = te.intrin "sigmoid"(%a) : f32
    yield %e
  }}
  %C = te.compute [%i, %j] reduce [%r: 3] "sum" : tensor<{m}x{n}xf32> {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %ce = arith.constant {n + 1} : index
    %q = arith.addi %j, %r : index
    %u = arith.subi %q, %c1 : index
    %lo = arith.maxsi %u, %c0 : index
    %x = arith.minsi %lo, %ce : index
    %p = te.read %P[%i, %x] : f32
    yield %p
  }}""", "P", (["i", "j"], ["r"]))
    # transpose: the consumer reads the producer with its axes swapped
    return ([("A", f"{n}x{m}")], f"""
  %P = te.compute [%i, %j] : tensor<{n}x{m}xf32> {{
    %a = te.read %A[%i, %j] : f32
    %c = arith.constant 2.0 : f32
    %e = arith.mulf %a, %c : f32
    yield %e
  }}
  %C = te.compute [%i, %j] : tensor<{m}x{n}xf32> {{
    %p = te.read %P[%j, %i] : f32
    %a = te.read %A[%j, %i] : f32
    %s = arith.subf %p, %a : f32
    yield %s
  }}""", "P", (["i", "j"], []))


@st.composite
def schedule(draw, stage, spatial, reduce, allow_kinds=True):
    """Schedule ops for one stage; returns (lines, leaves [(handle, is_reduce)])."""
    names = [f"{stage}_{a}" for a in spatial + reduce]
    lines = [f"  {', '.join('%' + n for n in names)} = te.axes %{stage}"]
    leaves = [(n, i >= len(spatial)) for i, n in enumerate(names)]
    kinds = {}
    counter = [0]

    def fresh():
        counter[0] += 1
        return f"{stage}_h{counter[0]}"

    for _ in range(draw(st.integers(0, 5))):
        action = draw(st.sampled_from(["split", "split", "fuse", "reorder", "kind"]))
        if action == "split":
            i = draw(st.integers(0, len(leaves) - 1))
            h, red = leaves[i]
            if h in kinds:
                continue
            o, n = fresh(), fresh()
            how = draw(st.sampled_from(["factor", "nparts"]))
            lines.append(f"  %{o}, %{n} = te.split %{h} {{{how} = {draw(st.integers(1, 6))}}}")
            leaves[i:i + 1] = [(o, red), (n, red)]
        elif action == "fuse" and len(leaves) > 1:
            i = draw(st.integers(0, len(leaves) - 2))
            (a, ra), (b, rb) = leaves[i], leaves[i + 1]
            if ra != rb or a in kinds or b in kinds:
                continue
            f = fresh()
            lines.append(f"  %{f} = te.fuse %{a}, %{b}")
            leaves[i:i + 2] = [(f, ra)]
        elif action == "reorder" and len(leaves) > 1:
            perm = draw(st.permutations(range(len(leaves))))
            pick = sorted(perm[:draw(st.integers(2, len(leaves)))])
            order = draw(st.permutations(pick))
            lines.append(f"  te.reorder {', '.join('%' + leaves[k][0] for k in order)}")
            moved = [leaves[k] for k in order]
            for p, x in zip(pick, moved):
                leaves[p] = x
        elif action == "kind" and allow_kinds:
            i = draw(st.integers(0, len(leaves) - 1))
            h, red = leaves[i]
            if h in kinds:
                continue
            kind = draw(st.sampled_from(["unroll"] if red else ["parallel", "vectorize", "unroll"]))
            kinds[h] = kind
            lines.append(f"  te.{kind} %{h}")
    return lines, leaves


@st.composite
def scheduled_function(draw):
    kind = draw(st.sampled_from(["elementwise", "reduction", "window", "clamp", "transpose"]))
    m, n = draw(st.integers(1, 6)), draw(st.integers(1, 7))
    params, stages, producer, (sp, red) = computes(kind, m, n)
    lines, leaves = draw(schedule("C", sp, red))
    if producer is not None:
        where = draw(st.sampled_from(["inline", "root", "at"]))
        if where == "inline":
            lines.append(f"  te.compute_inline %{producer}")
        elif where == "at":
            h = draw(st.sampled_from([x for x, _ in leaves]))
            lines.append(f"  te.compute_at %{producer}, %{h}")
        if where != "inline":
            plines, _ = draw(schedule(producer, ["i", "j"], []))
            lines += plines
    sig = ", ".join(f"%{p}: tensor<{s}xf32>" for p, s in params)
    text = f"te.func @f({sig}) -> tensor<{m}x{n}xf32> {{{stages}\n" + "\n".join(lines) + "\n  return %C\n}\n"
    return text


LONG = bool(os.environ.get("TVMD_FUZZ"))


@settings(max_examples=2000 if LONG else 60, deadline=None)
@given(scheduled_function(), st.integers(0, 2 ** 31 - 1))
def test_random_schedule_keeps_numbers(text, seed):
    check_numbers(text, seed)


def check_numbers(text, seed):
    m = parse_module(text)
    f = m.body.first
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(a.type.shape).astype(np.float32) for a in f.body.args]
    (want,) = run(f, *args)
    apply_to_func(f)
    verify(m)
    printed = print_module(m)
    assert print_module(parse_module(printed)) == printed
    (got,) = run(f, *args)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    tf = lower_func(f)
    out = np.full(want.shape, np.nan, np.float32)
    run_tir(tf, *args, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def _split_extents(e, f):
    return (1, e) if f >= e else (-(-e // f), f)


@st.composite
def staged_function(draw):
    kind = draw(st.sampled_from(["elementwise", "reduction", "window", "clamp", "transpose"]))
    m, n = draw(st.integers(1, 6)), draw(st.integers(1, 7))
    params, stages, producer, (sp, red) = computes(kind, m, n)
    lines = []
    if draw(st.booleans()):
        a_shape = params[0][1]
        reader = "P" if kind in ("window", "clamp") else "C"
        lines.append(f'  %AS = te.cache_read %A, %{reader} {{scope = "shared"}} : tensor<{a_shape}xf32>')
    op = draw(st.sampled_from(["cache_write", "rfactor"] if red else ["cache_write"]))
    if op == "cache_write":
        lines.append(f'  %CL = te.cache_write %C {{scope = "local"}} : tensor<{m}x{n}xf32>')
        cl, leaves = draw(schedule("C", sp, []))
        lines += cl
        if draw(st.booleans()):
            lines.append(f"  te.compute_at %CL, %{draw(st.sampled_from([x for x, _ in leaves]))}")
        lines += draw(schedule("CL", sp, red))[0]
    else:
        e = 5 if kind == "reduction" else 3
        lines.append(f"  %R_i, %R_j, %R_k = te.axes %C")
        split = draw(st.booleans())
        if split:
            f = draw(st.integers(1, 6))
            lines.append(f"  %R_ko, %R_ki = te.split %R_k {{factor = {f}}}")
            outer = draw(st.booleans())
            h, ext = ("R_ko", _split_extents(e, f)[0]) if outer else ("R_ki", _split_extents(e, f)[1])
        else:
            h, ext = "R_k", e
        fa = draw(st.integers(0, 2))
        shape = [m, n]
        shape.insert(fa, ext)
        lines.append(f"  %CF = te.rfactor %C, %{h} {{factor_axis = {fa}}} : tensor<{'x'.join(map(str, shape))}xf32>")
        lines += draw(schedule("CF", ["a", "b", "c"], ["r"] if split else []))[0]
        lines += draw(schedule("C", sp, ["rf"]))[0]
    if producer is not None:
        where = draw(st.sampled_from(["inline", "root"]))
        if where == "inline":
            lines.append(f"  te.compute_inline %{producer}")
        else:
            lines += draw(schedule(producer, ["i", "j"], []))[0]
    sig = ", ".join(f"%{p}: tensor<{s}xf32>" for p, s in params)
    return f"te.func @f({sig}) -> tensor<{m}x{n}xf32> {{{stages}\n" + "\n".join(lines) + "\n  return %C\n}\n"


@settings(max_examples=1000 if LONG else 40, deadline=None)
@given(staged_function(), st.integers(0, 2 ** 31 - 1))
def test_random_stage_ops_keep_numbers(text, seed):
    check_numbers(text, seed)
