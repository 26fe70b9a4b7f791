"""Shared checks for relay operators' TE computes (conversion/relay_to_te/topi_*.py).

``check(text)`` takes a module with one primitive relay.func and checks, on
random inputs, that the op's numpy ``compute()`` (the reference) equals

1. the TE compute run by the vectorized te interpreter, unscheduled;
2. the same with the default schedule applied (the loop executor);
3. with ``compiled=True`` (the default): the scheduled func lowered to TIR,
   simplified, compiled by the LLVM JIT and called.

    from topi_check import check, prim
    check(prim([("a", "tensor<2x3xf32>")], ["%r = exp(%a)"]))
"""

from __future__ import annotations

import numpy as np

from tvmd.conversion.relay_to_te.pass_ import lower_function
from tvmd.conversion.te_to_tir.apply_schedule import apply_to_func
from tvmd.dialects.te.interpreter import run
from tvmd.ir.printer import print_module
from tvmd.ir.verifier import verify
from tvmd.parser import parse_module


def prim(params, body, ret="%r"):
    ps = ", ".join(f"%{n}: {t}" for n, t in params)
    lines = "\n".join("  " + b for b in body)
    return f"relay.func @k({ps}) attributes {{primitive}} {{\n{lines}\n  return {ret}\n}}\n"


def random_input(t, rng, low=-6, high=7):
    dt = t.dtype
    if dt.kind == "f":
        return rng.standard_normal(t.shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=t.shape).astype(dt)
    if dt.kind == "u":
        return rng.integers(0, high, size=t.shape).astype(dt)
    return rng.integers(low, high, size=t.shape).astype(dt)


def reference(rf, args):
    env = dict(zip(rf.body.args, args))
    for op in rf.body.ops:
        if op.name == "relay.return":
            return [env[v] for v in op.operands]
        out = op.compute(*[env[v] for v in op.operands])
        if len(op.results) == 1:
            env[op.results[0]] = out
        else:
            for r, o in zip(op.results, out, strict=True):
                env[r] = o


def same(got, want, rtol=2e-5, atol=2e-5):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)


def compile_and_run(module, tf_name, args):
    """Lower every te.func of `module` to TIR, compile with the LLVM JIT and
    call @tf_name with `args`; returns the outputs as a list."""
    from tvmd.conversion.te_to_tir.lower import LowerTEToTIR
    from tvmd.dialects.tir.passes.simplify import Simplify
    from tvmd.ir.pass_manager import PassManager
    from tvmd.runtime.executor import allocate_outputs
    from tvmd.backend.llvm import jit

    pm = PassManager([(None, LowerTEToTIR()), (None, Simplify())])
    pm.run(module)
    verify(module)
    f = module.lookup(tf_name)
    lib = jit.compile(module)
    outs = allocate_outputs(f)
    # ascontiguousarray makes a 0-d array 1-d; reshape keeps scalars scalars
    lib[tf_name](*[np.ascontiguousarray(a).reshape(np.shape(a)) for a in args], *outs)
    return outs


def check(text, schedule=True, compiled=True, seed=0, rtol=2e-5, atol=2e-5, inputs=None):
    """See the module docstring; `inputs` overrides the random inputs."""
    rng = np.random.default_rng(seed)
    m = parse_module(text)
    rf = m.body.first
    args = inputs if inputs is not None else [random_input(a.type, rng) for a in rf.body.args]
    want = reference(rf, args)
    consts = [op.value.array for op in rf.body.ops if op.name == "relay.constant" and not op.value.is_splat()]
    tf = lower_function(m, rf, schedule=schedule)
    verify(m)
    assert print_module(parse_module(print_module(m))) == print_module(m)
    same(run(tf, *args, *consts), want, rtol, atol)
    if schedule:
        apply_to_func(tf)
        verify(m)
        same(run(tf, *args, *consts), want, rtol, atol)
        if compiled:
            same(compile_and_run(m, tf.sym_name, list(args) + consts), want, rtol, atol)
    return tf
