"""Random relay programs with if, tuples, closures and ADT values
(tests/relay_lang_programs.py): they print, parse back and print the same
(custom and generic forms), type with --infer-type, run in the interpreter,
and compute the same after dce+cse."""

import os
import sys

import numpy as np
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, os.path.dirname(__file__))
from relay_lang_programs import programs  # noqa: E402
from tvmd.dialects.relay.interpreter import run_function  # noqa: E402
from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
from tvmd.ir.printer import print_module
from tvmd.ir.registry import get_pass_class
from tvmd.parser import parse_module

FUZZ = settings(max_examples=max(40, settings.default.max_examples // 2), deadline=None,
                suppress_health_check=list(HealthCheck))


def run_pipeline(m, pipeline):
    PassManager(instantiate(parse_pipeline(pipeline), get_pass_class)).run(m)
    return m


@FUZZ
@given(programs())
def test_random_programs_round_trip_type_and_run(prog):
    text, args = prog
    m = parse_module(text, "fuzz.relay")
    printed = print_module(m)
    assert print_module(parse_module(printed)) == printed, text
    generic = print_module(m, generic=True)
    assert print_module(parse_module(generic)) == printed
    assert print_module(parse_module(generic), generic=True) == generic

    run_pipeline(m, "infer-type")
    typed = print_module(m)
    assert "?" not in typed.replace("match?", "")
    assert print_module(parse_module(typed)) == typed
    want = run_function(m, "main", *args)
    assert want.shape == (3,) and want.dtype == np.float32

    opt = run_pipeline(parse_module(typed), "dce,cse,dce")
    assert print_module(parse_module(print_module(opt))) == print_module(opt)
    assert np.array_equal(run_function(opt, "main", *args), want)
