"""bench/tune_search.py's exact expectation of random search's trials to
the target, checked against random orders drawn here."""

import importlib.util
import os
import random
import sys

import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "bench")


def _module():
    """bench/tune_search.py, loaded with bench/ on sys.path only meanwhile:
    the module puts its own folder there, and bench's module names
    (kernels, models) must not shadow installed packages afterwards
    (transformers imports a package called `kernels`)."""
    saved = list(sys.path)
    before = set(sys.modules)
    sys.path.insert(0, BENCH)
    try:
        spec = importlib.util.spec_from_file_location("tune_search", os.path.join(BENCH, "tune_search.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path[:] = saved
        for name in set(sys.modules) - before:
            f = getattr(sys.modules[name], "__file__", None) or ""
            if os.path.dirname(os.path.abspath(f)) == os.path.abspath(BENCH):
                del sys.modules[name]


def _sampled(n, m, budget, draws, rng):
    """Mean of min(1 + first hit position, budget) over random orders."""
    total = 0
    for _ in range(draws):
        order = list(range(n))
        rng.shuffle(order)
        first = next((t for t, i in enumerate(order, 1) if i < m), n)   # none: every config tried
        total += min(1 + first, budget)
    return total / draws


@pytest.mark.parametrize("n,m,budget", [(335, 3, 200), (1343, 2, 200), (50, 5, 200), (10, 10, 20), (40, 1, 8)])
def test_random_expected_matches_sampled_orders(n, m, budget):
    exact = _module().random_expected(n, m, budget)
    sampled = _sampled(n, m, budget, 20000, random.Random(n * 31 + m))
    assert abs(exact - sampled) <= 0.02 * exact + 0.05


def test_random_expected_edges():
    f = _module().random_expected
    assert f(10, 10, 200) == 2.0          # the default, then a hit at once
    assert f(10, 0, 50) == 11.0           # never: the whole space
    assert f(100, 0, 50) == 50.0          # never: the budget
    assert f(1, 1, 1) == 1.0              # no trial after the default


TEMPLATES = os.path.join(BENCH, "templates")


@pytest.mark.parametrize("name", sorted(f[:-3] for f in os.listdir(TEMPLATES) if f.endswith(".te")))
def test_bench_templates_compute_their_product(name):
    """Each template of the benchmark, at its default config and at two
    random ones, computes what numpy does (a table of a template that
    computed something else would compare the tuners on wrong kernels)."""
    import numpy as np
    sys.path.insert(0, os.path.dirname(__file__))
    from autotvm_check import lower_and_run
    from tvmd.autotvm.space import instantiate, templates
    from tvmd.parser import parse_module
    with open(os.path.join(TEMPLATES, name + ".te")) as f:
        text = f.read()
    ((func, space),) = templates(parse_module(text))
    shapes = [tuple(a.type.shape) for a in func.args]
    rng = np.random.default_rng(len(name))
    x, y = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    # a dense template's weight is read [j, k] (named W); the others multiply as they are
    want = x.astype(np.float64) @ (y.T if "%W[%j, %k]" in text else y).astype(np.float64)
    for index in [space.default().index, *rng.integers(0, len(space), 2).tolist()]:
        m = parse_module(text)
        ((_, sp),) = templates(m)
        instantiate(sp, sp.get(int(index)))
        np.testing.assert_allclose(lower_and_run(m, x, y), want, rtol=1e-3, atol=1e-3, err_msg=f"config {index}")
