"""Classic AutoTVM's Python API: the "tune_simple_template" tutorial runs
with only its imports changed (as a file too), define_split / knob /
reorder / annotate, the log's AutoTVM entities, apply_history_best applying
the best record, the fallback line, and a config that fails to instantiate."""

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tvmd as tvm
from tvmd import autotvm, te
from tvmd.autotvm.config import TemplateConfig
from tvmd.autotvm.record import ErrorNo, load, pick_best
from tvmd.autotvm.template import applying

N, L, M = 64, 48, 80
SEEN = []   # the config of each template call


@autotvm.template("tutorial/matmul")
def matmul(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    SEEN.append(cfg)
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, k, yi, xi)
    s[C].vectorize(xi)
    s[C].parallel(yo)
    return s, [A, B, C]


@autotvm.template("tutorial/matmul_v1")
def matmul_v1(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    cfg.define_knob("tile_y", [1, 2, 4, 8, 16])
    cfg.define_knob("tile_x", [1, 2, 4, 8, 16])
    yo, yi = s[C].split(y, cfg["tile_y"].val)
    xo, xi = s[C].split(x, cfg["tile_x"].val)
    s[C].reorder(yo, xo, k, yi, xi)
    return s, [A, B, C]


@autotvm.template("test/reorder_annotate")
def reorder_annotate(N, M, L):
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((L, M), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    cfg = autotvm.get_config()
    cfg.define_split("tile_j", j, num_outputs=2, policy="candidate", candidate=[[-1, 4], [2, 8]])
    jo, ji = cfg["tile_j"].apply(s, C, j)
    axes = [i, jo, k, ji]
    cfg.define_reorder("re", axes, policy="candidate", candidate=[[i, jo, k, ji], [jo, i, k, ji], [i, k, jo, ji]])
    cfg["re"].apply(s, C, axes)
    cfg.define_annotate("an", [jo, ji], policy="try_unroll_vec")
    cfg["an"].apply(s, C, [jo, ji], axis_lens=[M // cfg["tile_j"].size[-1], cfg["tile_j"].size[-1]],
                    max_unroll=16, cfg=cfg)
    return s, [A, B, C]


@autotvm.template("test/fails_sometimes")
def fails_sometimes(n):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    cfg = autotvm.get_config()
    cfg.define_split("t", s[B].op.axis[0], policy="candidate", candidate=[[-1, 1], [-1, 2], [-1, 4], [-1, 8]])
    cfg.define_annotate("an", [s[B].op.axis[0]], policy="try_unroll")
    if cfg["t"].size[-1] == 4:
        raise ValueError("tile 4 is not allowed")
    o, i = cfg["t"].apply(s, B, s[B].op.axis[0])
    cfg["an"].apply(s, B, [o], axis_lens=[n // cfg["t"].size[-1]], max_unroll=8, cfg=cfg)
    return s, [A, B]


def build_config(fn, task, index):
    """Call the template with config `index` of its task and build it."""
    with applying(TemplateConfig(task.config_space, task.config_space.get(index))):
        s, bufs = fn.func(*task.template_args)
    return tvm.build(s, bufs)


def test_tutorial_tunes_logs_and_applies_the_best(tmp_path):
    task = autotvm.task.create("tutorial/matmul", args=(N, L, M, "float32"), target="llvm")
    text = str(task.config_space)
    assert text.splitlines()[0] == "ConfigSpace (len=70, space_map="
    assert "tile_y: Split(policy=factors, product=64, num_outputs=2) len=7" in text
    assert (task.name, task.args, task.flop) == ("tutorial/matmul", [N, L, M, "float32"], 2 * N * L * M)
    assert task.target.startswith("llvm") and task.code_hash
    log = str(tmp_path / "matmul.log")
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(), runner=autotvm.LocalRunner(number=5))
    tuner = autotvm.tuner.RandomTuner(task)
    tuner.tune(n_trial=6, measure_option=option,
               callbacks=[autotvm.callback.progress_bar(6), autotvm.callback.log_to_file(log)])
    lines = open(log).read().splitlines()
    assert len(lines) == 6
    for line in lines:
        d = json.loads(line)
        assert d["version"] == 0.2 and d["input"][:3] == [task.target, "tutorial/matmul", [N, L, M, "float32"]]
        (ny, ky, sy), (nx, kx, sx) = d["config"]["entity"]
        assert (ny, ky, nx, kx) == ("tile_y", "sp", "tile_x", "sp")
        assert sy[0] == sx[0] == -1 and N % sy[1] == 0 and M % sx[1] == 0
        assert d["result"][1] == ErrorNo.NO_ERROR
    best = pick_best(load(log))[0]

    SEEN.clear()
    with autotvm.apply_history_best(log):
        with tvm.target.Target("llvm"):
            s, arg_bufs = matmul(N, L, M, "float32")
            func = tvm.build(s, arg_bufs)
    cfg = SEEN[-1]
    assert not cfg.is_fallback and cfg.index == best.index
    assert [cfg["tile_y"].size, cfg["tile_x"].size] == [v for _, _, v in best.entity]
    assert f"factor = {best.entity[1][2][1]}" in str(s)
    a_np = np.random.uniform(size=(N, L)).astype(np.float32)
    b_np = np.random.uniform(size=(L, M)).astype(np.float32)
    c_tvm = tvm.nd.empty((N, M))
    func(tvm.nd.array(a_np), tvm.nd.array(b_np), c_tvm)
    np.testing.assert_allclose(a_np @ b_np, c_tvm.numpy(), rtol=1e-4)


def test_define_knob_version_tunes_with_ot_entities(tmp_path):
    task = autotvm.task.create("tutorial/matmul_v1", args=(32, 16, 24, "float32"), target="llvm")
    assert len(task.config_space) == 25
    assert "tile_y: OtherOption([1, 2, 4, 8, 16]) len=5" in str(task.config_space)
    log = str(tmp_path / "v1.log")
    autotvm.tuner.GridSearchTuner(task).tune(
        n_trial=4, measure_option=autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=2),
                                                         runner=autotvm.LocalRunner(number=2, repeat=2)),
        callbacks=[autotvm.callback.log_to_file(log)])
    recs = load(log)
    assert [r.index for r in recs] == [0, 1, 2, 3]
    assert recs[1].entity == [["tile_y", "ot", 2], ["tile_x", "ot", 1]] and all(r.ok for r in recs)
    with autotvm.apply_history_best(log), tvm.target.Target("llvm"):
        s, bufs = matmul_v1(32, 16, 24, "float32")
    best = pick_best(recs)[0]
    assert f"factor = {best.entity[0][2]}" in str(s)


def split_space(extent, **kw):
    cfg = TemplateConfig(autotvm.space.ConfigSpace(None, []))
    cfg.define_split("t", extent, **kw)
    return cfg.space.knobs[0]


def test_define_split_policies():
    k = split_space(48)
    assert k.kind == "sp" and k.candidates == tuple((-1, f) for f in (1, 2, 3, 4, 6, 8, 12, 16, 24, 48))
    assert split_space(48, policy="power2").candidates == tuple((-1, f) for f in (1, 2, 4, 8, 16, 32))
    assert split_space(48, max_factor=8).candidates[-1] == (-1, 8)
    assert split_space(48, filter=lambda e: e.size[-1] % 3 == 0).candidates == \
        tuple((-1, f) for f in (3, 6, 12, 24, 48))
    cand = split_space(48, policy="candidate", candidate=[[-1, 4, 4], [3, 2, 8]], num_outputs=3)
    assert cand.candidates == ((-1, 4, 4), (3, 2, 8))
    three = split_space(48, num_outputs=3)
    assert len(three) == 45 and all(48 % (a * b) == 0 for _, a, b in three.candidates)
    four = split_space(16, num_outputs=4, policy="power2")
    assert all(a * b * c <= 16 for _, a, b, c in four.candidates)
    with pytest.raises(ValueError, match="unknown policy"):
        split_space(48, policy="nope")


@pytest.mark.parametrize("num_outputs", [2, 3, 4])
def test_split_entity_loops_cover_the_extent(num_outputs):
    knob = split_space(24, num_outputs=num_outputs, policy="power2")
    for size in knob.candidates:
        A = te.placeholder((24,), name="A")
        B = te.compute((24,), lambda i: A[i] * 2.0, name="B")
        s = te.create_schedule(B.op)
        loops = autotvm.config.SplitEntity(size).apply(s, B, s[B].op.axis[0])
        assert len(loops) == num_outputs and [lp.extent for lp in loops[1:]] == list(size[1:])
        assert math.prod(lp.extent for lp in loops) >= 24
        f = tvm.build(s, [A, B])
        a = np.arange(24, dtype="float32")
        b = tvm.nd.empty((24,))
        f(tvm.nd.array(a), b)
        np.testing.assert_array_equal(b.numpy(), a * 2)


def test_reorder_and_annotate_are_correct_for_every_config():
    task = autotvm.task.create("test/reorder_annotate", args=(6, 16, 5), target="llvm")
    kinds = [(k.name, k.kind, len(k)) for k in task.config_space.knobs]
    assert kinds == [("tile_j", "sp", 2), ("re", "re", 3), ("an", "an", 8)]
    assert task.config_space.knobs[1].candidates == ((0, 1, 2, 3), (1, 0, 2, 3), (0, 2, 1, 3))
    assert ("vec", "vec") not in task.config_space.knobs[2].candidates
    a = np.random.rand(6, 5).astype("float32")
    b = np.random.rand(5, 16).astype("float32")
    texts = set()
    for i in range(len(task.config_space)):
        f = build_config(reorder_annotate, task, i)
        c = tvm.nd.empty((6, 16))
        f(tvm.nd.array(a), tvm.nd.array(b), c)
        np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5)
        texts.add(task.payload(i)[0].text)
    assert len(texts) == len(task.config_space)   # every config is a different schedule


def test_fallback_outside_a_context_says_so_once_per_workload(capfd):
    SEEN.clear()
    matmul(8, 8, 8, "float32")
    matmul(8, 8, 8, "float32")
    matmul(8, 8, 16, "float32")
    err = capfd.readouterr().err
    lines = [ln for ln in err.splitlines() if "fallback" in ln]
    assert len(lines) == 2 and '[8, 8, 8, "float32"]' in lines[0] and '[8, 8, 16, "float32"]' in lines[1]
    assert all(c.is_fallback and c["tile_y"].size == [-1, 1] for c in SEEN)


def test_a_template_that_fails_for_a_config_is_an_instantiation_error(tmp_path):
    task = autotvm.task.create("test/fails_sometimes", args=(32,), target="llvm")
    log = str(tmp_path / "f.log")
    autotvm.tuner.GridSearchTuner(task).tune(
        n_trial=8, measure_option=autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=2)),
        callbacks=[autotvm.callback.log_to_file(log)])
    by_index = {r.index: r for r in load(log)}
    assert len(by_index) == 8
    for i, r in by_index.items():
        size, ann = task.config_space.get(i).values.values()
        if size[-1] == 4:
            assert r.error_no == ErrorNo.INSTANTIATION_ERROR and "tile 4 is not allowed" in r.error_msg
        elif ann == ("unroll",) and 32 // size[-1] > 8:     # cfg.raise_error: too long to unroll
            assert r.error_no == ErrorNo.INSTANTIATION_ERROR and "max_unroll" in r.error_msg
        else:
            assert r.ok, r.error_msg


def test_model_based_tuners_take_python_tasks(tmp_path):
    task = autotvm.task.create("tutorial/matmul_v1", args=(16, 8, 16, "float32"), target="llvm")
    opt = autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=4), runner=autotvm.LocalRunner(number=1))
    for tuner in (autotvm.tuner.GATuner(task, pop_size=4), autotvm.tuner.XGBTuner(task, plan_size=4)):
        tuner.tune(n_trial=9, early_stopping=20, measure_option=opt)
        assert tuner.trials == 9 and tuner.best_index is not None


def test_a_changed_template_does_not_take_old_records(tmp_path):
    task = autotvm.task.create("tutorial/matmul_v1", args=(16, 8, 16, "float32"), target="llvm")
    log = tmp_path / "old.log"
    r = task.config_space.get(7)
    from tvmd.autotvm.record import Record, entity_json
    rec = Record(task.target, task.name, task.args, 7, entity_json(r.values, task.config_space.kinds()), [1e-6],
                 code_hash="0123456789abcdef")
    log.write_text(rec.to_json() + "\n")
    with autotvm.apply_history_best(str(log)):
        with tvm.target.Target("llvm"):
            s, _ = matmul_v1(16, 8, 16, "float32")
    assert "factor = 1" in str(s)   # the fallback (tile_y 1), not config 7 (tile_y 4)


TUTORIAL = """
import numpy as np, logging, sys
import tvmd as tvm
from tvmd import te, autotvm

@autotvm.template("tutorial/matmul")
def matmul(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, k, yi, xi)
    s[C].vectorize(xi); s[C].parallel(yo)
    return s, [A, B, C]

N, L, M = 64, 48, 80
logging.getLogger("autotvm").setLevel(logging.DEBUG)
logging.getLogger("autotvm").addHandler(logging.StreamHandler(sys.stdout))
task = autotvm.task.create("tutorial/matmul", args=(N, L, M, "float32"), target="llvm")
print(task.config_space)
measure_option = autotvm.measure_option(builder=autotvm.LocalBuilder(), runner=autotvm.LocalRunner(number=5))
tuner = autotvm.tuner.RandomTuner(task)
tuner.tune(n_trial=6, measure_option=measure_option, callbacks=[autotvm.callback.log_to_file("matmul.log")])
with autotvm.apply_history_best("matmul.log"):
    with tvm.target.Target("llvm"):
        s, arg_bufs = matmul(N, L, M, "float32")
        func = tvm.build(s, arg_bufs)
a_np = np.random.uniform(size=(N, L)).astype(np.float32)
b_np = np.random.uniform(size=(L, M)).astype(np.float32)
c_np = a_np.dot(b_np)
c_tvm = tvm.nd.empty((N, M))
func(tvm.nd.array(a_np), tvm.nd.array(b_np), c_tvm)
np.testing.assert_allclose(c_np, c_tvm.numpy(), rtol=1e-4)
print("TUTORIAL OK")
"""


def test_the_tutorial_runs_as_a_script(tmp_path):
    (tmp_path / "tune_simple_template.py").write_text(textwrap.dedent(TUTORIAL))
    env = dict(os.environ)
    p = subprocess.run([sys.executable, "tune_simple_template.py"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    assert "TUTORIAL OK" in p.stdout and "ConfigSpace (len=70" in p.stdout
    assert len((tmp_path / "matmul.log").read_text().splitlines()) == 6
    assert "fallback" not in p.stderr


def test_import_stays_cheap_and_names_are_the_functions():
    code = ("import sys, tvmd.autotvm.measure_option, tvmd.autotvm.template; import tvmd.autotvm as a; "
            "assert 'numpy' not in sys.modules, 'numpy'; "
            "assert callable(a.measure_option) and callable(a.template) and callable(a.get_config); "
            "assert hasattr(a.task, 'create') and a.tuner.RandomTuner")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_the_pass_module_does_not_shadow_apply_history_best():
    """Importing the --apply-history-best pass (as tvm-opt does) must leave
    autotvm.apply_history_best the context manager, not a module."""
    import importlib

    from tvmd.ir.registry import get_pass_class
    get_pass_class("apply-history-best")
    importlib.import_module(get_pass_class("apply-history-best").__module__)
    assert callable(autotvm.apply_history_best)
