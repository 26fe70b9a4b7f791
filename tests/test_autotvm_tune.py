"""AutoTVM tuning: the log (AutoTVM v0.2 JSON lines), measurement that
survives crashing, hanging and wrong candidates, tvm-tune, resuming a killed
run, and applying the best records (--apply-history-best)."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tvmd.autotvm.measure import LocalMeasurer, MeasureOption
from tvmd.autotvm.record import ErrorNo, LogWriter, Record, load, pick_best
from tvmd.autotvm.tuner import make_tuner
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.parser import parse_module
from tvmd.testing.autotvm_faults import FAULTS, faulty_task

sys.path.insert(0, os.path.dirname(__file__))
from autotvm_check import MATMUL, lower_and_run  # noqa: E402


def tool(name, *args, **kw):
    code = f"import sys; from tvmd.tools.{name} import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, **kw)


def record(index=3, cost=1e-3, error_no=0, target="llvm -mcpu=znver4", task="matmul", code_hash="abc"):
    return Record(target, task, [["TENSOR", [24, 40], "float32"]], index, [["tile_i", "ot", 4]], [cost, cost],
                  error_no, 0.5, 1.7e9, code_hash)


def test_record_has_autotvm_v02_fields_and_round_trips():
    r = record()
    d = json.loads(r.to_json())
    assert d["input"] == ["llvm -mcpu=znver4", "matmul", [["TENSOR", [24, 40], "float32"]], {}]
    assert d["config"] == {"index": 3, "code_hash": "abc", "entity": [["tile_i", "ot", 4]]}
    assert d["result"] == [[1e-3, 1e-3], 0, 0.5, 1.7e9]
    assert d["version"] == 0.2 and "tvmd_version" in d
    assert Record.from_json(r.to_json()) == r


def test_pick_best_keeps_the_fastest_success_per_workload_and_target():
    rs = [record(1, 3e-3), record(2, 1e-3), record(3, 1e-4, ErrorNo.WRONG_ANSWER), record(4, 2e-3),
          record(5, 5e-3, target="llvm -mcpu=skylake"), record(6, 1e-3, task="other")]
    best = pick_best(rs)
    assert sorted((r.task, r.target, r.index) for r in best) == [
        ("matmul", "llvm -mcpu=skylake", 5), ("matmul", "llvm -mcpu=znver4", 2), ("other", "llvm -mcpu=znver4", 6)]


def test_a_bad_log_line_is_a_located_error(tmp_path):
    p = tmp_path / "log.json"
    p.write_text(record().to_json() + "\n" + '{"input": 1}\n')
    with pytest.raises(DiagnosticError) as info:
        load(p)
    d = info.value.diagnostics[0]
    assert d.loc.file_line_col()[:2] == (str(p), 2) and "not an AutoTVM v0.2 record" in d.message


def test_an_unfinished_last_line_is_dropped_on_resume(tmp_path):
    p = tmp_path / "log.json"
    good = record().to_json() + "\n"
    p.write_text(good + good[:40])   # killed while writing the second record
    assert len(load(p)) == 1
    with LogWriter(p) as w:
        w.write(record(7))
    assert [r.index for r in load(p)] == [3, 7]
    assert p.read_text().count("\n") == 2


def test_every_failure_is_one_record_and_measurement_goes_on():
    task = faulty_task()
    with LocalMeasurer(MeasureOption(timeout=2, repeat=2)) as m:
        m.ensure_reference(task)   # "ok", the default: the outputs others are checked against
        recs = m.measure(task, list(range(len(FAULTS))))
        again = m.measure(task, [FAULTS.index("faster")])   # the workers were replaced
    codes = {FAULTS[r.index]: r.error_no for r in recs}
    assert codes == {"ok": ErrorNo.NO_ERROR, "faster": ErrorNo.NO_ERROR, "wrong": ErrorNo.WRONG_ANSWER,
                     "hang": ErrorNo.RUN_TIMEOUT, "crash": ErrorNo.RUNTIME_DEVICE,
                     "badschedule": ErrorNo.INSTANTIATION_ERROR}
    msgs = {FAULTS[r.index]: r.error_msg for r in recs}
    assert "SIGSEGV" in msgs["crash"] and "timed out" in msgs["hang"] and "wrong answer" in msgs["wrong"]
    assert all(r.costs == [1e9] for r in recs if not r.ok)
    assert again[0].ok and len(again[0].costs) == 2


def test_tuning_survives_faulty_candidates_and_logs_each(tmp_path):
    task = faulty_task()
    log = tmp_path / "faulty.json"
    from tvmd.autotvm.callback import log_to_file
    with LogWriter(log) as w:
        tuner = make_tuner("grid", task)
        tuner.tune(len(FAULTS), measure_option=MeasureOption(timeout=2), callbacks=[log_to_file(w)])
    recs = load(log)
    assert sorted(r.index for r in recs) == list(range(len(FAULTS)))
    assert tuner.failed == 4 and FAULTS[tuner.best_index] in ("ok", "faster")


def test_tvm_tune_then_apply_history_best(tmp_path):
    src = tmp_path / "mm.te"
    src.write_text(MATMUL)
    log = tmp_path / "tune.json"
    r = tool("tune_main", src, "--trials", 6, "--log", log, "--tuner", "random", "--min-repeat-ms", 1)
    assert r.returncode == 0, r.stderr
    assert "matmul" in r.stdout and "Traceback" not in r.stderr
    recs = load(log)
    # 6 configs, then the 3 fastest measured again (--confirm 3): the best has the lowest mean
    assert len(recs) == 9 and all(x.ok for x in recs) and len({x.index for x in recs[:6]}) == 6
    assert {x.index for x in recs[6:]} <= {x.index for x in recs[:6]}
    assert recs[0].index == 1   # the default config comes first
    timings = {}
    for x in recs:
        timings.setdefault(x.index, []).append(x.mean_cost)
    best = next(x for x in recs if x.index == min(timings, key=lambda i: sum(timings[i]) / len(timings[i])))

    r = tool("opt_main", src, f"--apply-history-best={log}")
    assert r.returncode == 0, r.stderr
    factors = [int(line.split("factor = ")[1].rstrip("}")) for line in r.stdout.splitlines() if "te.split" in line]
    v = best.values()
    assert factors == [v["tile_i"], v["tile_j"], v["tile_k"]]
    assert "warning" not in r.stderr

    rng = np.random.default_rng(1)
    a = rng.standard_normal((24, 40)).astype(np.float32)
    b = rng.standard_normal((40, 20)).astype(np.float32)
    np.testing.assert_allclose(lower_and_run(parse_module(r.stdout), a, b), a @ b, rtol=1e-4, atol=1e-4)

    # a log tuned for another CPU never applies silently
    r = tool("opt_main", src, f"--apply-history-best=log={log} target=\"llvm -mcpu=skylake\"")
    assert r.returncode == 0, r.stderr
    assert "tuned for 'llvm -mcpu=" in r.stderr and "1 of 1 tunable kernel(s) have no record" in r.stderr
    # an existing log is not mixed into without --resume
    r = tool("tune_main", src, "--trials", 6, "--log", log)
    assert r.returncode == 1 and "give --resume" in r.stderr and len(load(log)) == 9

    out = tmp_path / "best.json"
    r = tool("tune_main", "--pick-best", log, "-o", out)
    assert r.returncode == 0, r.stderr
    assert [x.index for x in load(out)] == [best.index]


def test_a_killed_tuner_resumes(tmp_path):
    src = tmp_path / "mm.te"
    src.write_text(MATMUL)
    log = tmp_path / "tune.json"
    args = [src, "--trials", 20, "--log", log, "--tuner", "grid", "--min-repeat-ms", 1]
    code = "import sys; from tvmd.tools.tune_main import main; sys.exit(main())"
    p = subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and (not log.exists() or log.read_text().count("\n") < 5):
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    before = load(log)
    assert 5 <= len(before) < 20
    r = tool("tune_main", *args, "--resume")
    assert r.returncode == 0, r.stderr
    after = load(log)
    assert len(after) == 23
    assert len({x.index for x in after[:20]}) == 20   # no trial measured twice
    assert [x.index for x in after[:len(before)]] == [x.index for x in before]
    assert {x.index for x in after[20:]} <= {x.index for x in after[:20]}   # --confirm's 3 again


@pytest.mark.parametrize("args,message", [
    (["--trials", "0", "--log", "x.json"], "--trials takes an integer >= 1"),
    (["--trials", "3"], "give --trials N and --log FILE"),
    (["--trials", "3", "--log", "x.json", "--tuner", "sa"], "unknown tuner 'sa'"),
    (["--trials", "3", "--log", "x.json", "--target", "llvm -mcpu=nope"], "unknown CPU 'nope'"),
    (["--trials", "3", "--log", "x.json", "--timeout", "nan"], "--timeout takes a finite number"),
])
def test_tvm_tune_bad_arguments(tmp_path, args, message):
    src = tmp_path / "mm.te"
    src.write_text(MATMUL)
    r = tool("tune_main", src, *args, cwd=tmp_path)
    assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr
    assert "<command line>:1:" in r.stderr
    assert not (tmp_path / "x.json").exists()


class _Stream:
    def __init__(self, tty):
        self.tty, self.text = tty, ""

    def isatty(self):
        return self.tty

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_progress_line_on_a_terminal_and_quiet_when_piped():
    from tvmd.autotvm.callback import progress_bar

    class Tuner:   # what the callback reads of a tuner
        task = faulty_task()
        best_flops = 2.5e9
        confirming = False
    rec = record(cost=1e-6)
    rec.costs = [1e-6]
    Tuner.task.flop = 4000
    tty, pipe = _Stream(True), _Stream(False)
    for stream in (tty, pipe):
        bar = progress_bar(10, "[Task  1/ 2] ", stream=stream, done=3)
        bar(Tuner(), [None], [rec])
        bar.finish()
    assert tty.text.startswith("\r[Task  1/ 2] Current/Best:    4.00/   2.50 GFLOPS | Progress: (4/10) | ")
    assert tty.text.endswith(" s\n")
    assert pipe.text == ""


def test_two_templates_of_one_workload_are_checked_against_their_own_default():
    """@scale and @scale_1 share a workload (name less its suffix, shapes)
    but compute different things: neither is a wrong answer of the other."""
    from tvmd.autotvm.task import extract_tasks
    body = """te.func @{name}(%A: tensor<64xf32>) -> tensor<64xf32> {{
  %B = te.compute [%i] : tensor<64xf32> {{
    %a = te.read %A[%i] : f32
    %c = arith.constant {c} : f32
    %m = arith.mulf %a, %c : f32
    yield %m
  }}
  %i = te.axes %B
  %io, %ii = te.split %i {{factor = #tune.knob<"t", [4, 8]>}}
  te.vectorize %ii
  return %B
}}
"""
    tasks, _ = extract_tasks(parse_module(body.format(name="scale", c="2.0") + body.format(name="scale_1", c="3.0")))
    assert len(tasks) == 2 and tasks[0].workload == tasks[1].workload
    with LocalMeasurer(MeasureOption(repeat=1)) as m:
        recs = [r for t in tasks for r in (m.ensure_reference(t), *m.measure(t, [1]))]
    assert all(r.ok for r in recs), [r.error_msg for r in recs]
