"""bench/machine.py's limit kernels compile and run (a rename of an
intrinsic table once broke the int8 one, and bench/int8.py with it, while
the fp32 limit fell back to the nominal figure unnoticed).  Nothing here
times anything."""

import importlib.util
import math
import os

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


def machine():
    spec = importlib.util.spec_from_file_location("bench_machine", os.path.join(BENCH, "machine.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("int8", [False, True])
def test_the_limit_kernels_build_and_run(int8):
    from tvmd.backend.spec import parse_target
    vu = parse_target("llvm").vector_unit()
    if int8 and not vu.vnni_lanes:
        pytest.skip("no VNNI on this CPU: the int8 limit is not measured (machine.peak_int8_gops is None)")
    fn, lanes, chains, per = machine()._peak_kernel(int8=int8)
    assert lanes == (vu.vnni_lanes[0] if int8 else vu.lanes) and chains > 1 and per == (8 if int8 else 2)
    r = fn(1000)
    assert math.isfinite(r)
