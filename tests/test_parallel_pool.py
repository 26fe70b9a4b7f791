"""The persistent thread pool behind parallel loops (backend/llvm/parallel.py).

Every test runs the pool in a fresh interpreter (a subprocess with a
timeout): a deadlock or a lost wake-up fails the test with a message instead
of blocking the suite, and a crash shows as the signal that killed it.  The
default run is short; ``TVMD_STRESS=1`` makes every scenario long (tens of
thousands of calls, hundreds of forks and process exits).

The kernel adds A to C over a dynamic range, so a chunk run twice or not at
all shows in the result; the expected value is numpy's ``A + 1``.  Three
copies are interleaved: two separately JIT'd modules (which share the one
process-wide pool) and one loaded from an object file (which carries its
own pool).
"""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

STRESS = os.environ.get("TVMD_STRESS") == "1"
SCALE = 40 if STRESS else 1
TIMEOUT = 1200 if STRESS else 180    # generous: CI machines are loaded; a hang is minutes
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The scenarios, run as `python -c DRIVER <scenario>`.  faulthandler dumps
# every thread's Python stack shortly before the parent's timeout kills it.
DRIVER = r'''
import faulthandler, os, random, sys, threading, time
import numpy as np
faulthandler.enable()   # a crash prints every thread's Python stack
faulthandler.dump_traceback_later(float(os.environ["POOL_DUMP_AFTER"]), exit=True)
from tvmd.parser import parse_module
from tvmd.backend.llvm import jit

SRC = """
tir.func @accumulate(%A: memref<?xf32>, %C: memref<?xf32>, %n: index) {
  tir.for %i = 0 to %n parallel {
    %a = tir.load %A[%i] : f32
    %c = tir.load %C[%i] : f32
    %s = arith.addf %a, %c : f32
    tir.store %s, %C[%i] : f32
  }
}
"""
SCALE = int(os.environ["POOL_SCALE"])
LIBS = [jit.compile(parse_module(SRC)), jit.compile(parse_module(SRC)),
        jit.load_object(jit.emit_object(parse_module(SRC)))]
KERNELS = [lib.accumulate.cfunc for lib in LIBS]   # raw ctypes: many calls per second
SIZES = [0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 63, 64, 65, 1000, 4099]
MAXN = max(SIZES)
A = np.arange(MAXN, dtype=np.float32)


def threads_alive():
    return len(os.listdir("/proc/self/task"))


class Caller:
    """One calling thread's buffers: C = 1, C[:n] += A[:n], checked."""
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.c = np.empty(MAXN, np.float32)

    def once(self, n=None, kernels=KERNELS):
        n = self.rng.choice(SIZES) if n is None else n
        c = self.c
        c[:] = 1
        self.rng.choice(kernels)(A.ctypes.data, c.ctypes.data, n, MAXN, MAXN)
        if not (np.array_equal(c[:n], A[:n] + 1) and (c[n:] == 1).all()):
            bad = int(np.flatnonzero(c != np.concatenate([A[:n] + 1, np.ones(MAXN - n, np.float32)]))[0])
            raise AssertionError(f"wrong result: n={n}, TVMD_NUM_THREADS="
                                 f"{os.environ.get('TVMD_NUM_THREADS')}, C[{bad}]={c[bad]}")


def in_threads(count, body):
    errors = []
    def run(seed):
        try:
            body(seed)
        except BaseException as e:
            errors.append(f"thread {seed}: {e!r}")
    ts = [threading.Thread(target=run, args=(s,)) for s in range(count)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def tiny():
    """Many tiny calls; the thread count changes at every call (more threads
    than cores, 1, unset-like values, more than the pool's maximum)."""
    counts = ["4", "1", "3", "2", "8", "0", "junk", "16", "1", "300"]
    c = Caller(1)
    for i in range(1500 * SCALE):
        os.environ["TVMD_NUM_THREADS"] = counts[i % len(counts)]
        c.once()


def python_threads():
    """8 Python threads at once (ctypes drops the GIL): one holds the pool,
    the others run serially; calls both nest in time and interleave."""
    def body(seed):
        c = Caller(seed)
        for _ in range(300 * SCALE):
            c.once()
    in_threads(8, body)


def fork():
    """fork while 3 other threads are calling kernels (the pool may be held
    by one of them, its workers mid-chunk): the child has one thread, takes
    the pool over and starts workers of its own; the parent goes on."""
    import warnings
    warnings.simplefilter("ignore", DeprecationWarning)   # fork with threads
    stop = []
    def body(seed):
        c = Caller(seed)
        while not stop:
            c.once()
    bg = threading.Thread(target=in_threads, args=(3, body))
    bg.start()
    main = Caller(99)
    try:
        for i in range(15 * SCALE):
            main.once()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    c = Caller(1000 + i)
                    for _ in range(20):
                        c.once()
                    c.once(1000)
                    # 3 chunks, 2 workers: a pool still held by a parent's thread
                    # would leave the child serial
                    code = 0 if threads_alive() >= 3 else 2
                finally:
                    os._exit(code)
            deadline = time.monotonic() + 60
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                if time.monotonic() > deadline:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    raise AssertionError(f"forked child {i} hung")
                time.sleep(0.001)
            code = os.waitstatus_to_exitcode(status)
            assert code == 0, f"forked child {i}: exit code {code} (2: it ran serially)"
    finally:
        stop.append(1)
        bg.join()


def exit_now():
    """Exit while the workers still spin after the last call."""
    c = Caller(5)
    for _ in range(30):
        c.once(4099)


def exit_idle():
    """Exit while the workers sleep on their futex."""
    exit_now()
    time.sleep(0.05)


def exit_busy():
    """Exit while daemon threads are inside kernel calls."""
    def loop(seed):
        c = Caller(seed)
        while True:
            c.once()
    for s in range(3):
        threading.Thread(target=loop, args=(s,), daemon=True).start()
    time.sleep(0.02)


def counts():
    """Worker threads alive after calls with 1, 3, 3 (x50), 5, 2 (x20) threads,
    through both JIT'd modules: they share one pool."""
    base = threads_alive()
    c, seen = Caller(0), []
    for count, calls in (("1", 1), ("3", 1), ("3", 50), ("5", 1), ("2", 20)):
        os.environ["TVMD_NUM_THREADS"] = count
        for _ in range(calls):
            c.once(1000, KERNELS[:2])
        seen.append(threads_alive() - base)
    print(*seen)


def compile_race():
    """Four threads JIT modules at once (llvmlite drops the GIL) in a process
    with no runtime yet: all must share one pool (3 threads: 2 workers)."""
    os.environ["TVMD_NUM_THREADS"] = "3"
    base = threads_alive()
    compiled = []
    # keep the modules: a raw cfunc does not keep its JIT'd code alive
    in_threads(4, lambda seed: compiled.append(jit.compile(parse_module(SRC))))
    # a joined thread may linger in /proc for a moment after join returns
    for _ in range(10000):
        if threads_alive() == base:
            break
        time.sleep(0.001)
    c = Caller(0)
    for lib in compiled:
        c.once(1000, [lib.accumulate.cfunc])
    print(threads_alive() - base)


os.environ.setdefault("TVMD_NUM_THREADS", "3")
globals()[sys.argv[1]]()
print("ok")
'''


def run_scenario(name, env=None, timeout=TIMEOUT, driver=DRIVER):
    """Run DRIVER's `name` in a fresh interpreter; a hang or a crash fails."""
    e = {k: v for k, v in os.environ.items() if k != "TVMD_NUM_THREADS"}
    e.update(POOL_SCALE=str(SCALE), POOL_DUMP_AFTER=str(max(timeout - 15, 5)), **(env or {}))
    try:
        p = subprocess.run([sys.executable, "-c", driver, name], capture_output=True, text=True,
                           timeout=timeout, env=e, cwd=ROOT)
    except subprocess.TimeoutExpired as ex:
        out = ex.stdout or b""
        err = ex.stderr or b""
        text = (out.decode() if isinstance(out, bytes) else out) + (err.decode() if isinstance(err, bytes) else err)
        pytest.fail(f"thread-pool scenario '{name}' hung: no exit after {timeout}s "
                    f"(deadlock or lost wake-up in backend/llvm/parallel.py)\n{text[-4000:]}", pytrace=False)
    if p.returncode < 0:
        sig = signal.Signals(-p.returncode).name
        pytest.fail(f"thread-pool scenario '{name}' crashed: killed by {sig}\n{p.stderr[-4000:]}", pytrace=False)
    if p.returncode != 0 or p.stdout.split()[-1:] != ["ok"]:
        pytest.fail(f"thread-pool scenario '{name}' failed (exit code {p.returncode})\n"
                    f"{(p.stdout + p.stderr)[-4000:]}", pytrace=False)
    return p.stdout


def test_tiny_calls_with_changing_thread_counts():
    run_scenario("tiny")


def test_python_threads_call_at_once():
    run_scenario("python_threads")


def test_python_threads_with_more_pool_threads_than_cores():
    run_scenario("python_threads", {"TVMD_NUM_THREADS": "6"})


@pytest.mark.skipif(not hasattr(os, "fork") or not os.path.isdir("/proc/self/task"),
                    reason="needs fork and /proc to count threads")
def test_fork_while_other_threads_use_the_pool():
    run_scenario("fork")


@pytest.mark.parametrize("how", ["exit_now", "exit_idle", "exit_busy"])
def test_interpreter_exit_with_live_workers(how):
    for _ in range(SCALE):
        run_scenario(how)


def test_under_cpu_load():
    """A CPU hog on every core: workers are descheduled mid-protocol."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        run_scenario("python_threads", {"TVMD_NUM_THREADS": "4"})
    finally:
        for h in hogs:
            h.kill()
        for h in hogs:
            h.wait()


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc to count threads")
def test_workers_are_created_once_and_reused():
    out = run_scenario("counts")
    # serial: no worker; 3 threads: 2 workers; reused; grown to 4; never shrinks
    assert out.split()[:5] == ["0", "2", "2", "4", "4"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc to count threads")
def test_modules_compiled_at_once_share_one_pool():
    assert run_scenario("compile_race").split()[:1] == ["2"]


def test_a_hang_is_reported_as_a_failure():
    """The harness itself: a scenario that never ends fails, with a message."""
    never_ends = DRIVER.replace("globals()[sys.argv[1]]()", "time.sleep(3600)")
    with pytest.raises(pytest.fail.Exception, match="'exit_idle' hung: no exit after 1s"):
        run_scenario("exit_idle", timeout=1, driver=never_ends)


C_DRIVER = r"""
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

void accumulate(float *A, float *C, int64_t n, int64_t a_dim, int64_t c_dim);

enum { N = 4099, CALLS = %d, TINY_CALLS = %d };
static const int64_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 63, 64, 65, 1000, 4099};

static int calls(int seed) {   /* 0 when every result is A + 1 */
    static __thread float a[N], c[N];
    for (int it = 0; it < CALLS; it++) {
        int64_t n = sizes[(it * 7 + seed) %% 15];
        for (int i = 0; i < N; i++) { a[i] = (float)i; c[i] = 1.0f; }
        accumulate(a, c, n, N, N);
        for (int i = 0; i < N; i++)
            if (c[i] != (i < n ? a[i] + 1.0f : 1.0f)) return 1;
    }
    return 0;
}

static int tiny_calls(void) {   /* back-to-back calls of 1..9 iterations */
    float a[16], c[16] = {0};
    long expect[16] = {0};
    for (int i = 0; i < 16; i++) a[i] = 1.0f;
    for (long it = 0; it < TINY_CALLS; it++) {
        int64_t n = 1 + it %% 9;
        accumulate(a, c, n, 16, 16);
        for (int i = 0; i < n; i++) expect[i]++;
    }
    for (int i = 0; i < 16; i++)
        if ((long)c[i] != expect[i]) return 1;
    return 0;
}

static void *thread(void *seed) { return (void *)(intptr_t)calls((int)(intptr_t)seed); }

int main(void) {
    pthread_t t[8];
    int bad = tiny_calls() | calls(0);
    for (intptr_t i = 0; i < 8; i++) pthread_create(&t[i], NULL, thread, (void *)i);
    for (int i = 0; i < 8; i++) { void *r; pthread_join(t[i], &r); bad |= (int)(intptr_t)r; }
    pid_t pid = fork();
    if (pid == 0) _exit(calls(99));
    int status;
    waitpid(pid, &status, 0);
    bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    bad |= calls(5);
    puts(bad ? "wrong" : "ok");
    return bad;   /* exits while the object's own workers sleep */
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to link the object file")
def test_object_file_pool_in_a_c_program(tmp_path):
    """An object file carries its own pool and needs only libc: a C program
    makes many tiny calls, calls it from 9 threads, forks, and exits with the
    workers alive."""
    from tvmd.parser import parse_module
    from tvmd.backend.llvm import jit
    src = DRIVER.split('SRC = """')[1].split('"""')[0]
    obj, c, exe = tmp_path / "acc.o", tmp_path / "main.c", tmp_path / "main"
    jit.save_object(parse_module(src), str(obj))
    c.write_text(C_DRIVER % (300 * SCALE, 20000 * SCALE))
    subprocess.run(["cc", "-O1", "-o", str(exe), str(c), str(obj), "-lpthread"], check=True, timeout=120)
    try:
        p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=TIMEOUT,
                           env={**os.environ, "TVMD_NUM_THREADS": "3"})
    except subprocess.TimeoutExpired:
        pytest.fail(f"the C program using the object's pool hung (no exit after {TIMEOUT}s)", pytrace=False)
    assert p.returncode == 0 and p.stdout.split() == ["ok"], (p.returncode, p.stdout, p.stderr)
