"""AutoTVM's knob kinds in the te text: split (#tune.split, "sp"), reorder
(#tune.reorder or a #tune.knob of permutations on te.reorder's perm, "re")
and annotate (a #tune.knob on te.annotate's kind, "an"): their candidates,
defaults, log entities, validation, every config computing what numpy
computes, and a real tvm-tune run whose log applies."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tvmd.autotvm.record import Record, entity_json, load
from tvmd.autotvm.space import config_space, instantiate, templates
from tvmd.conversion.te_to_tir.schedule_state import Schedule
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.ir.printer import print_module
from tvmd.parser import parse_module

sys.path.insert(0, os.path.dirname(__file__))
from autotvm_check import lower_and_run  # noqa: E402

# all three kinds: a 2-way split of a policy and of a list, a 3-way split
# (two te.split ops, parts 1 and 2, sharing one knob), a reorder knob and an
# annotate knob, beside a plain te.annotate
MATMUL = """te.func @matmul(%A: tensor<24x6xf32>, %B: tensor<6x20xf32>) -> tensor<24x20xf32> {
  %C = te.compute [%i, %j] reduce [%k: 6] "sum" : tensor<24x20xf32> {
    %a = te.read %A[%i, %k] : f32
    %b = te.read %B[%k, %j] : f32
    %m = arith.mulf %a, %b : f32
    yield %m
  }
  %i, %j, %k = te.axes %C
  %io, %ii = te.split %i {factor = #tune.split<"tile_i", 24, [5, 8]>}
  %j0, %jr = te.split %j {factor = #tune.split<"tile_j", 20, [[2, 2], [5, 1]], {outputs = 3, part = 1}>}
  %j1, %j2 = te.split %jr {factor = #tune.split<"tile_j", 20, [[2, 2], [5, 1]], {outputs = 3, part = 2}>}
  %ko, %ki = te.split %k {factor = #tune.split<"tile_k", 6, "factors">}
  te.reorder %io, %j0, %ko, %ii, %j1, %ki, %j2
  te.reorder %ki, %j1 {perm = #tune.reorder<"order", "all">}
  te.annotate %j2 {kind = #tune.knob<"ann_j", ["none", "unroll", "vectorize"]>}
  te.annotate %io {kind = "parallel"}
  return %C
}
"""


def space_of(text):
    m = parse_module(text, "t.te")
    ((func, space),) = templates(m)
    return m, func, space


def data():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((24, 6)).astype(np.float32)
    b = rng.standard_normal((6, 20)).astype(np.float32)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def test_kinds_candidates_and_defaults():
    _, _, space = space_of(MATMUL)
    by = {k.name: k for k in space.knobs}
    assert space.kinds() == {"tile_i": "sp", "tile_j": "sp", "tile_k": "sp", "order": "re", "ann_j": "an"}
    assert by["tile_i"].candidates == ((-1, 5), (-1, 8)) and by["tile_i"].default == (-1, 5)
    assert by["tile_j"].candidates == ((-1, 2, 2), (-1, 5, 1))
    assert by["tile_k"].candidates == ((-1, 1), (-1, 2), (-1, 3), (-1, 6))
    assert by["tile_k"].default == (-1, 2)          # the most even split of 6 (2 x 3; ties: the first)
    assert by["order"].candidates == ((0, 1), (1, 0)) and by["order"].default == (0, 1)
    assert by["ann_j"].candidates == (("none",), ("unroll",), ("vectorize",)) and by["ann_j"].default == ("none",)
    assert len(space) == 2 * 2 * 4 * 2 * 3
    assert len(by["tile_j"].uses) == 2
    assert [k.describe() for k in space.knobs][:1] == [
        'tile_i: Split(policy=candidate, product=24, num_outputs=2) len=2 default=[-1, 5]']


@pytest.mark.parametrize("knob,length,default", [
    ('#tune.split<"t", 1024, "factors">', 11, (-1, 32)),
    ('#tune.split<"t", 1024, "power2">', 11, (-1, 32)),
    ('#tune.split<"t", 1024, "factors", 8>', 11, (-1, 8)),
    ('#tune.split<"t", 1024, [16, 8]>', 2, (-1, 16)),
    ('#tune.split<"t", 1024, "factors", {outputs = 3}>', 66, (-1, 8, 8)),
])
def test_split_policies(knob, length, default):
    text = f"""te.func @f(%A: tensor<1024xf32>) -> tensor<1024xf32> {{
  %B = te.compute [%i] : tensor<1024xf32> {{
    %a = te.read %A[%i] : f32
    yield %a
  }}
  %i = te.axes %B
  %o, %p = te.split %i {{factor = {knob}}}
  return %B
}}
"""
    _, _, space = space_of(text)
    (k,) = space.knobs
    assert (len(k), k.default) == (length, default)
    if "power2" in knob:
        assert [c[1] for c in k.candidates] == [1 << n for n in range(11)]


def test_instantiate_writes_plain_values_and_entities_round_trip():
    m, func, space = space_of(MATMUL)
    values = {"tile_i": (-1, 8), "tile_j": (-1, 5, 1), "tile_k": (-1, 3), "order": (1, 0), "ann_j": ("unroll",)}
    index = space.index_of(values)
    entity = entity_json(space.get(index).values, space.kinds())
    assert entity == [["tile_i", "sp", [-1, 8]], ["tile_j", "sp", [-1, 5, 1]], ["tile_k", "sp", [-1, 3]],
                      ["order", "re", [1, 0]], ["ann_j", "an", ["unroll"]]]
    r = Record("llvm -mcpu=znver4", "matmul", [], index, entity, [1e-3])
    assert Record.from_json(r.to_json()).values() == space.get(index).values
    instantiate(space, space.get(index))
    assert not config_space(func).knobs
    text = print_module(m)
    assert "te.split %i {factor = 8}" in text
    assert "te.split %j {factor = 5}" in text and "te.split %jr {factor = 1}" in text   # 5 x 1, then 1
    assert "te.split %k {factor = 3}" in text
    assert "te.reorder %ki, %j1 {perm = [1, 0]}" in text
    assert 'te.annotate %j2 {kind = "unroll"}' in text
    assert print_module(parse_module(text)) == text


def test_every_config_computes_the_matmul():
    a, b, want = data()
    n = len(space_of(MATMUL)[2])
    for index in range(n):
        m, func, space = space_of(MATMUL)
        instantiate(space, space.get(index))
        np.testing.assert_allclose(lower_and_run(m, a, b), want, rtol=1e-4, atol=1e-4,
                                   err_msg=f"config {index}: {space.get(index).values}")


ONE_AXIS = """te.func @f(%A: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %B = te.compute [%i, %j] : tensor<8x16xf32> {
    %a = te.read %A[%i, %j] : f32
    yield %a
  }
  %i, %j = te.axes %B
  SCHEDULE
  return %B
}
"""


@pytest.mark.parametrize("kind,want", [
    ("none", ("serial", None)), ("unroll", ("unrolled", None)), ("vectorize", ("vectorized", None)),
    ("parallel", ("parallel", None)), ("bind:threadIdx.x", ("thread", "threadIdx.x")),
])
def test_te_annotate_is_a_schedule_op(kind, want):
    m = parse_module(ONE_AXIS.replace("SCHEDULE", f'te.annotate %j {{kind = "{kind}"}}'))
    sched = Schedule(m.body.first).read()
    iv = sched.stages[0].leaves[1]
    assert (iv.kind, iv.thread) == want


def test_a_plain_perm_reorders():
    m = parse_module(ONE_AXIS.replace("SCHEDULE", "te.reorder %i, %j {perm = [1, 0]}"))
    sched = Schedule(m.body.first).read()
    assert [iv.name for iv in sched.stages[0].leaves] == ["j", "i"]


@pytest.mark.parametrize("schedule,message", [
    ('%o, %p = te.split %j {factor = #tune.split<"t", 16, "halves">}', "unknown split policy \"halves\""),
    ('%o, %p = te.split %j {factor = #tune.split<"t", -4, "factors">}', "the extent must be a positive integer"),
    ('%o, %p = te.split %j {factor = #tune.split<"t", 32, "factors">}',
     "knob 't' says the axis has 32 iterations, it has 16"),
    ('%o, %p = te.split %j {nparts = #tune.split<"t", 16, "factors">}', "it stands in te.split's 'factor'"),
    ('te.pragma %j {auto_unroll_max_step = #tune.split<"t", 16, "factors">}', "it stands in te.split's 'factor'"),
    ('te.reorder %i, %j {perm = #tune.knob<"o", [[0, 1], [1, 1]]>}', "must be a permutation of 0..1"),
    ('te.reorder %i, %j {perm = #tune.reorder<"o", "some">}', "unknown reorder policy"),
    ('te.reorder %i, %j {perm = #tune.knob<"o", [0, 1]>}', "te.reorder's 'perm' takes permutations"),
    ('te.annotate %j {kind = #tune.knob<"a", ["none", "tensorize"]>}', "te.annotate's 'kind' must be one of"),
    ('te.annotate %j {kind = #tune.knob<"a", [1, 2]>}', "te.annotate's 'kind' must be one of"),
    ('%o, %p = te.split %j {factor = #tune.knob<"t", [[2], [4]]>}', "candidates of te.reorder's 'perm' only"),
])
def test_bad_knobs_are_located(schedule, message):
    with pytest.raises(DiagnosticError) as info:
        templates(parse_module(ONE_AXIS.replace("SCHEDULE", schedule), "t.te"))
    d = info.value.diagnostics[0]
    assert message in d.message
    assert d.loc.file_line_col()[1] == 7   # the schedule op


@pytest.mark.parametrize("schedule,message", [
    ('te.annotate %j {kind = "vec"}', "'kind' must be one of 'none', 'unroll'"),
    ("te.reorder %i, %j {perm = [0, 0]}", "'perm' must be a permutation of 0..1"),
    ("te.reorder %i, %j {perm = [1, 0, 2]}", "'perm' must be a permutation of 0..1"),
])
def test_bad_plain_values_are_verifier_errors(schedule, message):
    with pytest.raises(DiagnosticError) as info:
        parse_module(ONE_AXIS.replace("SCHEDULE", schedule), "t.te")
    assert message in info.value.diagnostics[0].message


def test_knob_features_of_split_reorder_and_annotate():
    from tvmd.autotvm import features as F
    from tvmd.autotvm.task import extract_tasks
    tasks, _ = extract_tasks(parse_module(MATMUL), "llvm")
    (task,) = tasks
    X = F.knob_features(task, list(range(len(task.config_space))))
    assert X.shape == (len(task.config_space), 5) and np.isfinite(X).all()
    vals = [task.config_space.get(7).values]
    assert np.array_equal(F.knob_features_of_values(task, vals), F.knob_features(task, [7]))


def tool(name, *args, **kw):
    code = f"import sys; from tvmd.tools.{name} import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, **kw)


def test_tvm_tune_space_prints_the_kinds(tmp_path):
    src = tmp_path / "mm.te"
    src.write_text(MATMUL)
    r = tool("tune_main", "--space", src)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "@matmul: ConfigSpace (len=96, space_map=",
        "   0 tile_i: Split(policy=candidate, product=24, num_outputs=2) len=2 default=[-1, 5]",
        "   1 tile_j: Split(policy=candidate, product=20, num_outputs=3) len=2 default=[-1, 2, 2]",
        "   2 tile_k: Split(policy=factors, product=6, num_outputs=2) len=4 default=[-1, 2]",
        "   3 order: Reorder(policy=all) len=2 default=[0, 1]",
        '   4 ann_j: Annotate(kinds=["none", "unroll", "vectorize"]) len=3 default=["none"]',
        ")"]


def test_tvm_tune_then_apply_history_best(tmp_path):
    src = tmp_path / "mm.te"
    src.write_text(MATMUL)
    log = tmp_path / "tune.json"
    r = tool("tune_main", src, "--trials", 6, "--log", log, "--tuner", "random", "--min-repeat-ms", 1)
    assert r.returncode == 0, r.stderr
    recs = load(log)
    assert len(recs) == 9 and all(x.ok for x in recs), [x.error_msg for x in recs]
    # 6 trials, then the 3 fastest measured again (--confirm's default)
    trials, again = recs[:6], recs[6:]
    assert len({x.index for x in trials}) == 6
    assert sorted(x.index for x in again) == sorted(x.index for x in sorted(trials, key=lambda x: x.mean_cost)[:3])
    _, _, space = space_of(MATMUL)
    assert recs[0].index == space.default().index
    for rec in recs:
        kinds = [(name, kind) for name, kind, _ in rec.entity]
        assert kinds == [("tile_i", "sp"), ("tile_j", "sp"), ("tile_k", "sp"), ("order", "re"), ("ann_j", "an")]
        line = json.loads(rec.to_json())["config"]["entity"]
        assert line[0][2][0] == -1 and isinstance(line[4][2], list)
        assert rec.values() == space.get(rec.index).values          # the log round-trips
    timings = {}
    for x in recs:
        timings.setdefault(x.index, []).append(x.mean_cost)
    best = space.get(min(timings, key=lambda i: sum(timings[i]) / len(timings[i])))

    r = tool("opt_main", src, f"--apply-history-best={log}")
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr and "tune." not in r.stdout
    v = best.values
    assert f"te.split %i {{factor = {v['tile_i'][1]}}}" in r.stdout
    assert f"te.reorder %ki, %j1 {{perm = [{v['order'][0]}, {v['order'][1]}]}}" in r.stdout
    assert f'te.annotate %j2 {{kind = "{v["ann_j"][0]}"}}' in r.stdout
    a, b, want = data()
    np.testing.assert_allclose(lower_and_run(parse_module(r.stdout), a, b), want, rtol=1e-4, atol=1e-4)
