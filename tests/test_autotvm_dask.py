"""AutoTVM measurement on a Dask cluster (autotvm/measure_dask.py), on a real
two-worker LocalCluster: faulty candidates cost one record each and kill no
Dask worker, tuning through the cluster, a worker killed in the middle of a
measurement (the candidate is retried once elsewhere; lost twice, it is one
failed record), and an unreachable scheduler."""

import os
import signal
import sys
import threading
import time

import pytest

pytest.importorskip("distributed")

from distributed import Client, LocalCluster  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from test_autotvm_tune import MATMUL  # noqa: E402
from tvmd.autotvm.measure import MeasureOption  # noqa: E402
from tvmd.autotvm.measure_dask import DaskMeasurer, measured_spans, measuring, worker_processes  # noqa: E402
from tvmd.autotvm.record import ErrorNo  # noqa: E402
from tvmd.autotvm.task import extract_tasks  # noqa: E402
from tvmd.autotvm.tuner import make_tuner  # noqa: E402
from tvmd.parser import parse_module  # noqa: E402
from tvmd.testing.autotvm_faults import FAULTS, faulty_task  # noqa: E402

# Every config sums A[i] over 2^20 steps for 64 rows: ~0.15 s a call, and a
# run makes three calls (checked, warm-up, timed): long enough to be caught
# mid-measurement, whatever the schedule.
SLOW = """te.func @slow(%A: tensor<64xf32>) -> tensor<64xf32> {
  %B = te.compute [%i] reduce [%k: 1048576] "sum" : tensor<64xf32> {
    %a = te.read %A[%i] : f32
    yield %a
  }
  %i, %k = te.axes %B
  %io, %ii = te.split %i {factor = #tune.knob<"tile", [1, 2, 4, 8, 16, 32]>}
  return %B
}
"""


def task_of(text):
    (task,), _ = extract_tasks(parse_module(text), "llvm")
    return task


def alive(pid) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"   # a zombie is dead
    except (FileNotFoundError, ProcessLookupError):
        return False


class Cluster:
    """A LocalCluster, its Client, and every measurement subprocess seen on
    its workers (checked gone after the cluster closes)."""

    def __init__(self, allowed_failures=None):
        import dask
        config = {} if allowed_failures is None else {"distributed.scheduler.allowed-failures": allowed_failures}
        with dask.config.set(config):   # read by the scheduler, which runs in this process
            self.cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                        resources={"device": 1}, dashboard_address=None)
        self.client = Client(self.cluster, set_as_default=False)
        self.address = self.cluster.scheduler_address
        self.subprocesses = set()

    def workers(self) -> dict:
        """Dask worker address -> pid."""
        return self.client.run(os.getpid, on_error="ignore")

    def note_subprocesses(self):
        for pids in self.client.run(worker_processes, on_error="ignore").values():
            if isinstance(pids, list):
                self.subprocesses.update(pids)

    def close(self):
        try:
            self.note_subprocesses()
        finally:
            self.client.close()
            self.cluster.close()
        deadline = time.time() + 20
        while time.time() < deadline and any(alive(p) for p in self.subprocesses):
            time.sleep(0.1)
        assert not [p for p in self.subprocesses if alive(p)], "measurement subprocesses outlived the cluster"


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(params=[None, 0], ids=["scheduler-reruns", "scheduler-allows-no-failure"])
def fresh_cluster(request):
    """One to kill workers of: its scheduler reruns a task whose worker died
    (Dask's default), or fails it at once (KilledWorker; DaskMeasurer
    resubmits it)."""
    c = Cluster(request.param)
    try:
        yield c
    finally:
        c.close()


def test_every_failure_is_one_record_and_no_dask_worker_dies(cluster):
    before = cluster.workers()
    task = faulty_task()
    with DaskMeasurer(cluster.address, MeasureOption(timeout=2, repeat=2)) as m:
        assert m.n_parallel == 2
        m.ensure_reference(task)
        recs = m.measure(task, list(range(len(FAULTS))))
        again = m.measure(task, [FAULTS.index("faster")])   # the subprocesses were replaced
        cluster.note_subprocesses()
    codes = {FAULTS[r.index]: r.error_no for r in recs}
    assert codes == {"ok": ErrorNo.NO_ERROR, "faster": ErrorNo.NO_ERROR, "wrong": ErrorNo.WRONG_ANSWER,
                     "hang": ErrorNo.RUN_TIMEOUT, "crash": ErrorNo.RUNTIME_DEVICE,
                     "badschedule": ErrorNo.INSTANTIATION_ERROR}
    msgs = {FAULTS[r.index]: r.error_msg for r in recs}
    assert "SIGSEGV" in msgs["crash"] and "timed out" in msgs["hang"] and "wrong answer" in msgs["wrong"]
    assert all(r.costs == [1e9] for r in recs if not r.ok)
    assert again[0].ok and len(again[0].costs) == 2
    assert cluster.workers() == before   # the same two worker processes, alive


def test_random_tuning_on_the_cluster(cluster):
    task = task_of(MATMUL)
    seen = []
    with DaskMeasurer(cluster.address, MeasureOption(min_repeat_ms=1)) as m:
        tuner = make_tuner("random", task).tune(8, measurer=m, callbacks=[lambda t, i, r: seen.extend(r)])
        cluster.note_subprocesses()
    assert len(seen) == 8 and all(r.ok for r in seen), [r.error_msg for r in seen]
    assert len({r.index for r in seen}) == 8
    assert seen[0].index == task.config_space.default().index   # the reference first
    assert all(r.workload == task.workload and r.code_hash == task.code_hash for r in seen)
    assert tuner.best_index in {r.index for r in seen} and tuner.failed == 0


def test_without_a_device_resource_runs_never_overlap(cluster):
    """Runs submitted with no resource (as on workers started without
    --resources device=1) are still timed one at a time on this machine."""

    class NoDevice(DaskMeasurer):
        def _device_declared(self):
            return False

    task = task_of(SLOW)
    with NoDevice(cluster.address, MeasureOption(repeat=1, timeout=60)) as m:
        m.ensure_reference(task)
        before = {a: len(v) for a, v in cluster.client.run(measured_spans).items()}
        recs = m.measure(task, [1, 2, 3, 4])
        cluster.note_subprocesses()
    assert all(r.ok for r in recs), [r.error_msg for r in recs]
    # the runs' own (start, end) times, taken under the host lock on each worker
    spans = {a: v[before.get(a, 0):] for a, v in cluster.client.run(measured_spans).items()}
    assert sum(len(v) for v in spans.values()) == 4
    ordered = sorted(x for v in spans.values() for x in v)
    assert all(end <= nxt_start for (_, end), (nxt_start, _) in zip(ordered, ordered[1:]))   # never two at once ...
    assert all(spans.values())                                    # ... though both workers measured


def test_a_worker_killed_mid_measurement(fresh_cluster):
    """Config X: its worker is killed while it is timed, then the worker it
    was retried on: one failed record naming both.  Config Y: killed once,
    retried elsewhere, measured.  Every config gets exactly one record."""
    c = fresh_cluster
    task = task_of(SLOW)
    n = len(task.config_space)
    seen, errors = [], []
    m = DaskMeasurer(c.address, MeasureOption(repeat=1, timeout=60, build_timeout=120), client=c.client)

    def tune():
        try:
            make_tuner("grid", task).tune(n, measurer=m, callbacks=[lambda t, i, r: seen.extend(r)])
        except BaseException as e:   # noqa: BLE001 - reported by the main thread
            errors.append(e)

    def kill_while_measuring(want, not_on=(), timeout=90):
        """Kill the Dask worker timing a config `want` accepts; its index and
        address.  The worker kills itself after looking at what it times, so
        that it cannot finish the config between the look and the kill."""
        deadline = time.time() + timeout
        while time.time() < deadline and tuning.is_alive():
            for addr, index in c.client.run(measuring, on_error="ignore").items():
                if isinstance(index, int) and want(index) and addr not in not_on:
                    c.note_subprocesses()

                    def shoot(index=index):
                        if measuring() == index:
                            os.kill(os.getpid(), signal.SIGKILL)
                        return measuring()

                    answer = c.client.run(shoot, workers=[addr], on_error="return")
                    if not isinstance(answer.get(addr), (int, type(None))):   # no answer: it died
                        return index, addr
            time.sleep(0.02)
        pytest.fail("no worker was found measuring")

    tuning = threading.Thread(target=tune, daemon=True)
    tuning.start()
    try:
        default = task.config_space.default().index
        x, first = kill_while_measuring(lambda i: i != default)
        _, second = kill_while_measuring(lambda i: i == x, not_on=(first,))
        y, third = kill_while_measuring(lambda i: i not in (default, x))
        tuning.join(180)
    finally:
        if tuning.is_alive():
            m.close()
            tuning.join(30)
        m.close()
    assert not errors and not tuning.is_alive(), errors
    assert sorted(r.index for r in seen) == list(range(n))   # one record each
    by = {r.index: r for r in seen}
    assert by[x].error_no == ErrorNo.RUNTIME_DEVICE, by[x]
    assert first in by[x].error_msg and second in by[x].error_msg and "died" in by[x].error_msg
    assert all(r.ok for r in seen if r.index != x), [(r.index, r.error_msg) for r in seen]
    assert (y, "run", third) in m.losses, (y, third, m.losses)
    deadline = time.time() + 60
    while len(c.workers()) < 2 and time.time() < deadline:   # the nannies start new workers
        time.sleep(0.2)
    assert len(c.workers()) == 2


def test_an_unreachable_scheduler_is_a_connection_error_at_once():
    t0 = time.perf_counter()
    with pytest.raises(ConnectionError) as info:
        DaskMeasurer("tcp://127.0.0.1:1")
    assert "tcp://127.0.0.1:1" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConnectionError, match="unknown address scheme 'http'"):
        DaskMeasurer("http://127.0.0.1:8786")
    assert time.perf_counter() - t0 < 15
