"""Each relay graph pass on random programs (the extended op set of
random_programs: batch_norm, layer_norm, mean, pools, softmax, dropout,
transposes, per-channel scales, reshapes): the reference interpreter gives
the same values before and after, within 1e-4 (the passes reorder float
arithmetic: folded batch_norm scales, scales moved into weights)."""

import numpy as np
from hypothesis import HealthCheck, given, settings

from tvmd.dialects.relay.interpreter import run_function
from tvmd.testing.relay_programs import relay_programs
from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
from tvmd.ir.printer import print_module
from tvmd.ir.registry import PRESETS, get_pass_class
from tvmd.parser import parse_module

EXAMPLES = 60 if settings.default.max_examples > 100 else 15
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
PROGRAMS = relay_programs(max_ops=10, extended=True)


def check(prog, pipeline, rtol=1e-4):
    text, inputs = prog
    want = run_function(parse_module(text), "main", *inputs)
    m = parse_module(text)
    PassManager(instantiate(parse_pipeline(pipeline), get_pass_class)).run(m)
    got = run_function(m, "main", *inputs)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    out = print_module(m)
    assert print_module(parse_module(out)) == out
    return m


@FUZZ
@given(PROGRAMS)
def test_simplify_inference(prog):
    m = check(prog, "simplify-inference")
    assert not any(op.name in ("relay.nn.batch_norm", "relay.nn.layer_norm", "relay.nn.dropout")
                   and all(u.name == "relay.get_item" and u.attributes["index"] == 0
                           for r in op.results for u in r.uses) and op.results[0].uses
                   for op in m.walk())


@FUZZ
@given(PROGRAMS)
def test_fold_scale_axis(prog):
    check(prog, "simplify-inference,fold-scale-axis,fold-constant")


@FUZZ
@given(PROGRAMS)
def test_fold_constant(prog):
    check(prog, "fold-constant")


@FUZZ
@given(PROGRAMS)
def test_canonicalize(prog):
    check(prog, "canonicalize{bias-add-to-add=true}")


@FUZZ
@given(PROGRAMS)
def test_fuse_ops(prog):
    for opts in ("", "{reduce-epilogue=true}", "{max-depth=3}"):
        m = check(prog, "fuse-ops" + opts)
        for f in m.body.ops:
            if "primitive" in f.attributes:
                assert all(op.name != "relay.call" for op in f.walk(include_self=False))


@FUZZ
@given(PROGRAMS)
def test_convert_layout(prog):
    check(prog, "convert-layout{nn.conv2d=NHWC},fold-constant")
    check(prog, "convert-layout{nn.conv2d=NCHW nn.max_pool2d=NHWC}")


@FUZZ
@given(PROGRAMS)
def test_presets(prog):
    check(prog, ",".join(PRESETS["O3"]))
