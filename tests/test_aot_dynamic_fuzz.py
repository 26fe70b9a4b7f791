"""Random relay programs over '?' rows (products, elementwise ops,
softmax, splits into tuples, appends to a cache): the native dynamic entry
(runtime/aot_dynamic.py) gives what the kernel-by-kernel steps give, bit for
bit, and both what numpy gives, at several lengths of one build."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tvmd.runtime.build import build
from tvmd.runtime.program import Profile

OPS = ("dense", "bias_tanh", "add", "softmax", "split", "append")


@st.composite
def programs(draw):
    ops = draw(st.lists(st.sampled_from(OPS), min_size=1, max_size=6))
    return ops, draw(st.integers(0, 2 ** 31 - 1))


def make(ops, seed):
    """(relay text, input arrays maker, numpy reference) for `ops`."""
    rng = np.random.default_rng(seed)
    params = [("x", "?x8")]       # name, type text
    consts = {}                   # name -> array (an input the test gives)
    lines, ref = [], []
    vals = [("x", 8)]
    k = 0
    appended = []
    for op in ops:
        name, c = vals[-1]
        k += 1
        v = f"v{k}"
        if op == "dense":
            n = int(rng.choice([4, 8, 16]))
            w = f"w{k}"
            params.append((w, f"{n}x{c}"))
            consts[w] = (rng.standard_normal((n, c)) / np.sqrt(c)).astype(np.float32)
            lines.append(f"%{v} = nn.dense(%{name}, %{w}) : tensor<?x{n}xf32>")
            ref.append((v, lambda e, a=name, w=w: e[a] @ e[w].T))
            vals.append((v, n))
        elif op == "bias_tanh":
            b = f"b{k}"
            params.append((b, f"{c}"))
            consts[b] = rng.standard_normal(c).astype(np.float32)
            lines.append(f"%{v}a = add(%{name}, %{b}) : tensor<?x{c}xf32>")
            lines.append(f"%{v} = tanh(%{v}a) : tensor<?x{c}xf32>")
            ref.append((v, lambda e, a=name, b=b: np.tanh(e[a] + e[b])))
            vals.append((v, c))
        elif op == "add":
            other = next((x for x, cc in reversed(vals[:-1]) if cc == c), name)
            lines.append(f"%{v} = add(%{name}, %{other}) : tensor<?x{c}xf32>")
            ref.append((v, lambda e, a=name, o=other: e[a] + e[o]))
            vals.append((v, c))
        elif op == "softmax":
            lines.append(f"%{v} = nn.softmax(%{name}) {{axis = -1}} : tensor<?x{c}xf32>")

            def softmax(e, a=name):
                z = np.exp(e[a] - e[a].max(-1, keepdims=True))
                return z / z.sum(-1, keepdims=True)
            ref.append((v, softmax))
            vals.append((v, c))
        elif op == "split" and c % 2 == 0:
            h = c // 2
            lines.append(f"%{v}s = split(%{name}) {{indices_or_sections = 2, axis = 1}} : "
                         f"tuple<tensor<?x{h}xf32>, tensor<?x{h}xf32>>")
            lines.append(f"%{v}0 = get_item(%{v}s) {{index = 0}} : tensor<?x{h}xf32>")
            lines.append(f"%{v}1 = get_item(%{v}s) {{index = 1}} : tensor<?x{h}xf32>")
            lines.append(f"%{v} = multiply(%{v}0, %{v}1) : tensor<?x{h}xf32>")
            ref.append((v, lambda e, a=name, h=h: e[a][:, :h] * e[a][:, h:]))
            vals.append((v, h))
        elif op == "split":   # an odd width: nothing to split
            continue
        else:   # append to a cache given as an input; its result is returned
            p = f"past{k}"
            params.append((p, f"?x{c}"))
            lines.append(f"%{v} = concatenate(%{p}, %{name}) {{axis = 0}} : tensor<?x{c}xf32>")
            ref.append((v, lambda e, a=name, p=p: np.concatenate([e[p], e[a]])))
            appended.append((v, c))
            vals.append((name, c))   # the chain goes on from the appended value
    last, c = vals[-1]
    results = [(last, c)] + appended
    sig = ", ".join(f"%{n}: tensor<{t}xf32>" for n, t in params)
    rtypes = ", ".join(f"tensor<?x{cc}xf32>" for _, cc in results)
    rtypes = f"({rtypes})" if len(results) > 1 else rtypes
    text = (f"relay.func @main({sig}) -> {rtypes} {{\n" + "\n".join("  " + x for x in lines)
            + f"\n  return {', '.join('%' + n for n, _ in results)}\n}}\n")
    return text, params, consts, ref, [n for n, _ in results]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_the_dynamic_entry_equals_the_steps_and_numpy(prog_seed):
    ops, seed = prog_seed
    text, params, consts, ref, outs = make(ops, seed)
    cm = build(text, fallback=False)
    prog = cm.executor.program
    assert prog.dynamic_entry is not None, prog.entry_why
    rng = np.random.default_rng(seed + 1)
    for rows, past in ((3, 0), (1, 2), (8, 5)):
        env = dict(consts)
        env["x"] = rng.standard_normal((rows, 8)).astype(np.float32)
        for n, t in params:
            if n.startswith("past"):
                env[n] = rng.standard_normal((past, int(t.split("x")[1]))).astype(np.float32)
        arrays = [env[n] for n, _ in params]
        native = prog.run(arrays)
        steps = prog.run(arrays, profile=Profile())
        for a, b in zip(native, steps):
            np.testing.assert_array_equal(a, b)
        for name, f in ref:
            env[name] = f(env)
        for a, name in zip(native, outs):
            np.testing.assert_allclose(a, env[name], rtol=2e-5, atol=2e-5)
