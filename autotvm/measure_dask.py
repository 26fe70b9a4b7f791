"""Measuring configs on a Dask distributed cluster; the tuner stays here.

    with DaskMeasurer("tcp://host:8786", MeasureOption(timeout=4)) as m:
        make_tuner("xgb", task).tune(200, measurer=m)

Workers are started as ``dask worker tcp://host:8786 --resources device=1
--nthreads N``: N build slots, and one device, on which one measurement
runs at a time.  Algorithm of :meth:`DaskMeasurer.measure` for a batch:

    build   make each config's payload here (measure.build_payload: a
            Python template's code lives only in this process), submit
            it (``pure=False``); on the Dask worker it builds in one of that worker's isolated build
            subprocesses (measure.Worker, kept in a module-level cache and
            reused across tasks), with the build timeout, errors mapped to
            codes by the same helper as LocalMeasurer (measure.build_on).
    run     when the builds are back, submit every built config's run at
            once, each reading its build's result (the object bytes travel
            from worker to worker), with the resource ``{"device": 1}``
            when a worker declares one; on the worker, the run goes to that
            process's one isolated runner subprocess (measure.run_on), under
            a per-process lock and an exclusive lock on a file of the host,
            so measurements never overlap on one device nor one machine.
            Runs on different machines overlap.
    finish  in the batch's order, wait for each run, bring the costs and
            outputs back here and check them (Measurer.finish).

A Dask worker that dies takes the candidate it was building or running
with it: the scheduler reruns the task elsewhere, and its ``remove-worker``
event tells this measurer of the loss; where the cluster allows no failures,
the scheduler raises KilledWorker instead and the candidate is resubmitted
here.  A candidate lost twice is one failed record (COMPILE_HOST for a build,
RUNTIME_DEVICE for a run) whose message names the lost workers; tuning
goes on.  The scheduler's own rerun can finish before the events of the
deaths before it reach this client (under load, of both): every finished
candidate is checked against the scheduler's count of deaths
(TaskState.suspicious) before it counts as measured.  Nothing reaches the
tuner as an exception.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import uuid

from .measure import BuildResult, Measurer, MeasureOption, Worker, build_on, build_payload, run_on
from .record import ErrorNo

# ---- on the Dask worker ------------------------------------------------------
#
# One Dask worker process keeps one runner subprocess and as many build
# subprocesses as it has ever built on at once (at most its thread count),
# here, at module level: a Dask worker imports this module once, so they
# are reused across batches, tasks and clients.

_LOCK = threading.Lock()
_FREE_BUILDERS: list[Worker] = []
_ALL_WORKERS: list[Worker] = []
_RUNNER: list[Worker] = []
_RUN_LOCK = threading.Lock()   # one measurement at a time in this process
_MEASURING: list[int] = []     # the index being measured, while it is
_SPANS: list[tuple[float, float]] = []   # (start, end) wall-clock seconds of each run timed here
LOCK_FILE = "tvmd-autotvm-measure.lock"


def _new_worker(**kw) -> Worker:
    w = Worker(**kw)
    with _LOCK:
        if not _ALL_WORKERS:
            atexit.register(_stop_all)
        _ALL_WORKERS.append(w)
    return w


def _stop_all():
    # The subprocesses would also exit on their own (their stdin closes with
    # this process); stopping them here spares a moment of orphans.
    for w in list(_ALL_WORKERS):
        w.stop()


def remote_build(payload, index: int, option: MeasureOption) -> BuildResult:
    """Build one config (its payload, made in the tuner's process) in one
    of this Dask worker's build subprocesses."""
    with _LOCK:
        w = _FREE_BUILDERS.pop() if _FREE_BUILDERS else None
    if w is None:
        w = _new_worker()
    try:
        return build_on(w, payload, index, option)
    finally:
        with _LOCK:
            _FREE_BUILDERS.append(w)


def remote_run(b: BuildResult, option: MeasureOption, target: str):
    """Run one built config in this Dask worker's runner subprocess:
    (costs, outputs, error_no, error_msg)."""
    with _RUN_LOCK:
        if not _RUNNER:
            _RUNNER.append(_new_worker(max_calls=200))
        with host_lock():
            _MEASURING[:] = [b.index]
            start = time.time()
            try:
                return run_on(_RUNNER[0], b, option, target)
            finally:
                _SPANS.append((start, time.time()))   # still under the lock
                _MEASURING.clear()


class host_lock:
    """An exclusive flock on a file in the temporary directory: Dask workers
    of one machine (and their clients) measure one at a time.  The kernel
    drops it when the holder dies, so a killed worker never wedges the
    others."""

    def __enter__(self):
        import fcntl
        import tempfile
        path = os.path.join(tempfile.gettempdir(), LOCK_FILE)
        try:
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:   # another user's file: a read-only descriptor locks as well
            self.fd = os.open(path, os.O_RDONLY)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def measuring() -> int | None:
    """The index of the config this Dask worker is timing now, if any
    (``client.run(measuring)``)."""
    return _MEASURING[0] if _MEASURING else None


def measured_spans() -> list[tuple[float, float]]:
    """(start, end) wall-clock seconds of every run this Dask worker timed,
    taken inside the host lock (``client.run(measured_spans)``: runs on one
    machine must never overlap)."""
    return list(_SPANS)


def worker_processes() -> list[int]:
    """The pids of this Dask worker's live build and run subprocesses (for
    tests and for looking at a cluster: ``client.run(worker_processes)``)."""
    with _LOCK:
        return [w.proc.pid for w in _ALL_WORKERS if w.proc is not None and w.proc.poll() is None]


# ---- here ----------------------------------------------------------------------

class _Job:
    """One candidate's build or run on the cluster: its current future and
    the workers that died holding it."""

    def __init__(self, what: str, index: int, submit, device: bool = False):
        self.what, self.index, self.submit = what, index, submit
        self.device = device   # needs a worker with the "device" resource
        self.lost: list[str] = []
        self.keys: set[str] = set()
        self.tries = 0
        self.resubmit()

    def resubmit(self):
        self.future = self.submit(self.tries)
        self.tries += 1
        self.keys.add(self.future.key)
        self.rearm()

    def rearm(self):
        """Be woken when the future next finishes, errs or is cancelled (a
        finished one whose worker died goes back to pending)."""
        self.done = threading.Event()
        self.future.add_done_callback(lambda _, done=self.done: done.set())

    def lost_message(self) -> str:
        tries = " and then ".join(self.lost)
        return f"{self.what} lost: the Dask worker {tries} died while it ran there"


class DaskMeasurer(Measurer):
    """Builds and runs on the workers of a Dask cluster (module docstring)."""

    connect_timeout = 5.0      # seconds to reach the scheduler
    poll = 1.0                 # seconds between looks at a pending candidate's fate
    no_worker_timeout = 60.0   # seconds without a worker that could take a candidate before it fails
    max_losses = 2             # workers that may die with a candidate before it is given up

    def __init__(self, address: str, option: MeasureOption | None = None, client=None):
        super().__init__(option)
        self.address = address
        self.own_client = client is None
        self.client = client if client is not None else _connect(address, self.connect_timeout)
        self.losses: list[tuple[int, str, str]] = []   # (index, "build"|"run", worker) of each loss seen
        self._lost: dict[str, list[str]] = {}           # task key -> workers that died running it
        self._watched: set[str] = set()
        self._lock = threading.Lock()
        self._runs: dict[int, _Job] = {}                # id(BuildResult) -> its run, submitted by measure()
        self._closed = False
        # The scheduler tells of a dead worker's tasks only on the "all" topic; a
        # handler the user's client had there keeps getting every event.
        self._previous_handler = getattr(self.client, "_event_handlers", {}).get("all")
        self.client.subscribe_topic("all", self._on_event)

    @property
    def n_parallel(self) -> int:
        """The cluster's build slots: its worker threads (at least 1)."""
        return max(1, sum(self.client.nthreads().values()))

    def close(self):
        if self._closed:
            return
        self._closed = True
        for job in self._runs.values():
            job.future.cancel()
        self._runs.clear()
        try:
            if self._previous_handler is not None:
                self.client.subscribe_topic("all", self._previous_handler)
            else:
                self.client.unsubscribe_topic("all")
        except Exception:   # noqa: BLE001 - a client already closed has no topics to leave
            pass
        if self.own_client:
            self.client.close()

    # ---- measuring
    def measure(self, task, indices):
        """Build the batch, submit all its runs at once, finish each in order."""
        t0 = time.perf_counter()
        jobs = [self._build_job(task, i) for i in indices]
        builds = [self._build_result(j) for j in jobs]
        build_wall = (time.perf_counter() - t0) / max(1, len(indices))
        device = self._device_declared()
        for job, b in zip(jobs, builds):
            if b.error_no == ErrorNo.NO_ERROR:
                self._runs[id(b)] = self._run_job(task, b, device, job.future)
        try:
            return [self.finish(task, b, build_wall) for b in builds]
        finally:
            left = list(self._runs.values())   # not reached: an exception on the way
            for job in left:
                job.future.cancel()
            self._runs.clear()
            self._forget(jobs + left)

    def build(self, task, indices) -> list[BuildResult]:
        jobs = [self._build_job(task, i) for i in indices]
        try:
            return [self._build_result(j) for j in jobs]
        finally:
            self._forget(jobs)

    def run(self, task, b: BuildResult):
        """(costs, outputs, error_no, error_msg) of one built config."""
        job = self._runs.pop(id(b), None) or self._run_job(task, b, self._device_declared())
        try:
            value, why = self._wait(job)
        finally:
            self._forget([job])
        if why is not None:
            return None, None, why[0], why[1]
        return value

    # ---- submitting
    def _build_job(self, task, index) -> _Job:
        payload = build_payload(task, index)   # here: a Python template's code is not on the workers

        def submit(_):
            key = f"tvmd-build-{task.name}-{index}-{uuid.uuid4().hex[:12]}"
            self._watch(key)
            return self.client.submit(remote_build, payload, index, self.option, key=key, pure=False)
        return _Job("build", index, submit)

    def _run_job(self, task, b: BuildResult, device: bool, build_future=None) -> _Job:
        """The run of `b`, reading the build's future where there is one (the
        object travels from worker to worker), else, and when resubmitted (the
        future may have died with its worker), `b` itself."""
        resources = {"device": 1} if device else None

        def submit(tries):
            key = f"tvmd-run-{task.name}-{b.index}-{uuid.uuid4().hex[:12]}"
            self._watch(key)
            build = build_future if build_future is not None and tries == 0 else b
            return self.client.submit(remote_run, build, self.option, task.build_target, key=key, pure=False,
                                      resources=resources)
        return _Job("run", b.index, submit, device)

    def _build_result(self, job: _Job) -> BuildResult:
        value, why = self._wait(job)
        return value if why is None else BuildResult(job.index, why[0], why[1])

    def _device_declared(self) -> bool:
        """Whether some worker declares the ``device`` resource (else runs
        are kept apart by the workers' locks alone)."""
        workers = self.client.scheduler_info().get("workers", {})
        return any("device" in (w.get("resources") or {}) for w in workers.values())

    # ---- waiting
    def _wait(self, job: _Job):
        """(value, None) once the job's future finishes, or (None, (error_no,
        message)) when it raised, was lost `max_losses` times or found no
        worker for `no_worker_timeout` s.  A loss the scheduler did not rerun
        by itself (KilledWorker) is resubmitted here."""
        from distributed.scheduler import KilledWorker
        crash = ErrorNo.RUNTIME_DEVICE if job.what == "run" else ErrorNo.COMPILE_HOST
        alone_since = None
        next_look = time.monotonic() + 5.0
        while True:
            fut = job.future
            job.done.wait(self.poll)
            if fut.status == "finished":
                try:
                    value = fut.result(timeout=self.no_worker_timeout)
                    # A worker may have died holding it before the rerun that
                    # finished: the loss is recorded even though we only look now.
                    if self._late_losses(job):
                        return None, (crash, job.lost_message())
                    return value, None
                except Exception:   # noqa: BLE001 - lost (or cancelled) since it finished: look again
                    pass
            if job.done.is_set() and fut.status == "pending":
                job.rearm()
            self._collect_losses(job)
            if fut.status == "error":
                exc = fut.exception()
                if not isinstance(exc, KilledWorker):
                    return None, (crash, f"{job.what} failed on the cluster: {_one_line(exc)}")
                # The scheduler gave up on the task (a cluster allowing no
                # failures): submit it again, once.
                self._note_loss(job, exc.last_worker.address)
                if len(job.lost) >= self.max_losses or job.tries >= self.max_losses:
                    return None, (crash, job.lost_message())
                job.resubmit()
                continue
            if fut.status == "cancelled":
                return None, (ErrorNo.UNKNOWN_ERROR, f"{job.what} cancelled on the cluster")
            if len(job.lost) >= self.max_losses:
                fut.cancel()
                return None, (crash, job.lost_message())
            if time.monotonic() >= next_look:   # a scheduler round trip: now and then
                next_look = time.monotonic() + 5.0
                if self._can_take(job):
                    alone_since = None
                elif alone_since is None:
                    alone_since = time.monotonic()
                elif time.monotonic() - alone_since > self.no_worker_timeout:
                    fut.cancel()
                    need = " with the 'device' resource" if job.device else ""
                    return None, (ErrorNo.UNKNOWN_ERROR, f"{job.what}: no Dask worker{need} at {self.address} "
                                                         f"for {self.no_worker_timeout:g} s")

    def _late_losses(self, job, wait=5.0) -> bool:
        """Whether the job's task was lost `max_losses` times, counting the
        deaths the scheduler saw (TaskState.suspicious) whose events have
        not reached this client yet: its rerun can finish before the events
        of the deaths before it arrive, even of all of them.  Waits up to
        `wait` s for the events the scheduler counts, so that the record
        (and `losses`) names the workers."""
        self._collect_losses(job)
        keys = sorted(job.keys)

        def deaths(dask_scheduler, keys=keys):
            return sum(getattr(dask_scheduler.tasks.get(k), "suspicious", 0) or 0 for k in keys)
        try:
            n = int(self.client.run_on_scheduler(deaths))
        except Exception:   # noqa: BLE001 - a scheduler that cannot tell: the events are all we know
            n = 0
        want = min(n, self.max_losses)
        deadline = time.monotonic() + wait
        while len(job.lost) < want and time.monotonic() < deadline:
            time.sleep(0.05)
            self._collect_losses(job)
        while len(job.lost) < want:
            job.lost.append("a worker the scheduler saw die")
        return len(job.lost) >= self.max_losses

    def _can_take(self, job) -> bool:
        workers = self.client.scheduler_info().get("workers", {}).values()
        if job.device:
            return any((w.get("resources") or {}).get("device", 0) >= 1 for w in workers)
        return bool(workers)

    # ---- losses, as the scheduler reports them
    def _watch(self, key):
        with self._lock:
            self._watched.add(key)

    def _forget(self, jobs):
        with self._lock:
            for job in jobs:
                for k in job.keys:
                    self._watched.discard(k)
                    self._lost.pop(k, None)

    def _on_event(self, event):
        # Called on the client's event loop: note, never block.
        _, msg = event
        if isinstance(msg, dict) and msg.get("action") == "remove-worker" and not msg.get("expected"):
            with self._lock:
                for key in msg.get("processing-tasks", ()):
                    if key in self._watched:
                        self._lost.setdefault(key, []).append(msg.get("worker", "?"))
        if self._previous_handler is not None:
            return self._previous_handler(event)
        return None

    def _collect_losses(self, job):
        with self._lock:
            seen = [(k, w) for k in job.keys for w in self._lost.get(k, ())]
        for _, w in seen:
            self._note_loss(job, w)

    def _note_loss(self, job, worker):
        if worker not in job.lost:   # the event and a KilledWorker may both tell of one death
            job.lost.append(worker)
            self.losses.append((job.index, job.what, worker))


def _connect(address: str, timeout: float):
    """A Client of the scheduler at `address`, or ConnectionError in one
    line saying why."""
    import socket
    from distributed import Client
    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port
    from distributed.comm.registry import backends
    try:
        scheme, where = parse_address(address)
        if scheme not in backends:   # a Client would fail later, and hang on its way out
            raise ValueError(f"unknown address scheme '{scheme}' (known: {', '.join(sorted(backends))})")
        if scheme == "tcp":
            # A plain connection first: it says why (refused, unknown host) at
            # once, where a Client only times out and leaves itself half made.
            socket.create_connection(parse_host_port(where), timeout=timeout).close()
        return Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError, OverflowError) as e:
        why = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        raise ConnectionError(f"cannot reach the Dask scheduler at '{address}': {why}") from None


def _one_line(e) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]
