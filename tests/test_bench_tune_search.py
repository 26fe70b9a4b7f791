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
