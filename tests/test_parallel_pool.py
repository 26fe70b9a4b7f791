"""The persistent thread pool behind parallel loops (target/llvm/parallel.py).

Workers are created once per process and reused; TVMD_NUM_THREADS is read
at every call; repeated calls, calls from several Python threads at once
and calls after fork give numpy's answer.  Thread counts are observed from
/proc/self/task in a fresh interpreter, where no other test has started
workers.
"""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from tvmd.parser import parse_module
from tvmd.target.llvm import jit

# C[i] += A[i] over a dynamic range: a chunk run twice, or not at all, shows.
ACCUMULATE = """
tir.func @accumulate(%A: memref<?xf32>, %C: memref<?xf32>, %n: index) {
  tir.for %i = 0 to %n parallel {
    %a = tir.load %A[%i] : f32
    %c = tir.load %C[%i] : f32
    %s = arith.addf %a, %c : f32
    tir.store %s, %C[%i] : f32
  }
}
"""

_lib = []


def lib():
    if not _lib:
        _lib.append(jit.compile(parse_module(ACCUMULATE)))
    return _lib[0]


def run_script(code, env=None, timeout=120):
    """Run `code` in a fresh interpreter (the pool starts empty there)."""
    e = dict(os.environ)
    e.pop("TVMD_NUM_THREADS", None)
    e.update(env or {})
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                       env=e, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


PRELUDE = f"""
import os
import numpy as np
from tvmd.parser import parse_module
from tvmd.target.llvm import jit
lib = jit.compile(parse_module('''{ACCUMULATE}'''))
def threads():
    return len(os.listdir('/proc/self/task'))
def call(n=1000):
    a = np.arange(n, dtype=np.float32)
    c = np.ones(n, np.float32)
    lib.accumulate(a, c, n)
    assert np.array_equal(c, a + 1), 'wrong result'
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc to count threads")
def test_workers_are_created_once_and_reused():
    out = run_script(PRELUDE + """
base = threads()
os.environ['TVMD_NUM_THREADS'] = '1'
call()
print(threads() - base)            # serial: no worker
os.environ['TVMD_NUM_THREADS'] = '3'
call()
print(threads() - base)            # two workers, the caller is the third
for _ in range(50):
    call()
print(threads() - base)            # the same two
os.environ['TVMD_NUM_THREADS'] = '5'
call()
print(threads() - base)            # grown to four
os.environ['TVMD_NUM_THREADS'] = '2'
for _ in range(20):
    call()
print(threads() - base)            # never shrinks, reused
""")
    assert out.split() == ["0", "2", "2", "4", "4"]


def test_repeated_calls_with_any_range_and_thread_count(monkeypatch):
    """Ranges shorter than, equal to and longer than the thread count, and
    empty ones; every element accumulated exactly once per call."""
    k = lib().accumulate
    rng = np.random.default_rng(3)
    for threads in ("1", "2", "3", "8", "64"):
        monkeypatch.setenv("TVMD_NUM_THREADS", threads)
        for n in (0, 1, 2, 3, 5, 7, 8, 63, 64, 65, 1000, 4099):
            a = rng.standard_normal(n).astype(np.float32)
            c = np.zeros(n, np.float32)
            for _ in range(3):
                k(a, c, n)
            np.testing.assert_array_equal(c, a + a + a)


def test_many_python_threads_at_once(monkeypatch):
    """Python threads call kernels concurrently (ctypes drops the GIL): one
    holds the pool, the others run their loop serially; all are right."""
    monkeypatch.setenv("TVMD_NUM_THREADS", "4")
    k = lib().accumulate
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for it in range(200):
                n = int(rng.integers(1, 5000))
                a = rng.standard_normal(n).astype(np.float32)
                c = np.ones(n, np.float32)
                k(a, c, n)
                k(a, c, n)
                if not np.array_equal(c, (np.float32(1) + a) + a):
                    errors.append((seed, it, n))
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append(repr(e))

    ts = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_pool_works_in_a_forked_child():
    out = run_script(PRELUDE + """
os.environ['TVMD_NUM_THREADS'] = '2'
call()                              # the parent's pool has a worker
pid = os.fork()
if pid == 0:
    try:
        for _ in range(20):
            call(5000)              # the child starts its own
        os._exit(0)
    except BaseException:
        os._exit(1)
_, status = os.waitpid(pid, 0)
call()
print(os.waitstatus_to_exitcode(status))
""")
    assert out.split() == ["0"]


def test_object_file_carries_its_own_pool(tmp_path, monkeypatch):
    monkeypatch.setenv("TVMD_NUM_THREADS", "2")
    path = tmp_path / "acc.o"
    jit.save_object(parse_module(ACCUMULATE), str(path))
    loaded = jit.load_object(str(path))
    a = np.arange(777, dtype=np.float32)
    c = np.zeros(777, np.float32)
    for _ in range(5):
        loaded.accumulate(a, c, 777)
    np.testing.assert_array_equal(c, 5 * a)
