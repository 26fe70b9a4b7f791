"""Run one tool invocation in a forked child and classify how it ended.

The parent imports tvmd once and forks a child per run, so a run costs a
fork (milliseconds), not a Python start-up (a second).  The child:

* gets its own process group (a hang kills everything it started), an empty
  sandbox directory as its working directory, stdout to /dev/null and stderr
  to a file;
* runs under limits: address space (``mem_mb``), CPU seconds, file size and
  no core dumps;
* calls the tool's ``main(argv)`` and leaves with its return code through
  ``os._exit``: an exception that escapes ``main`` prints its traceback and
  exits 70.

Classification (``Outcome.kind``), worst first::

    crash      killed by a signal we did not send (SIGSEGV, SIGABRT, ...)
    hang       still running at the timeout, or out of CPU time
    memory     MemoryError, or the address-space limit hit
    traceback  a Python traceback on stderr
    internal   an "internal error" line (a bug reported as such)
    stray      a file written in the sandbox other than the named output
    silent     a failure exit with nothing on stderr
    other      any other exit status
    diagnostic exit 1 with an ``error:`` line and nothing worse
    ok         exit 0

Everything from ``traceback`` up is a finding.  The signature is what
identifies a finding across mutants: the kind and the innermost frame (or
the internal error's ``at file:line``), so that a thousand mutants hitting
one bug count once.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field

FINDINGS = ("crash", "hang", "memory", "traceback", "internal", "stray", "silent", "other")

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_INTERNAL_AT = re.compile(r"error: .*?(\w+(?:Error|Exception|Exit)): .* at (\S+:\d+) \((\w+)\)")
_EXC_LINE = re.compile(r"^(\w+(?:Error|Exception|Exit|Interrupt)|\w+Error)\b", re.M)
_LOCATED = re.compile(r"^.+:\d+:\d+: error: ", re.M)


@dataclass
class Outcome:
    kind: str
    rc: int | None = None
    signal: int | None = None
    seconds: float = 0.0
    stderr: str = ""
    signature: str = ""
    stray: list = field(default_factory=list)

    @property
    def is_finding(self):
        return self.kind in FINDINGS

    @property
    def located(self):
        """A diagnostic with file:line:col (not only ``error: ...``)."""
        return bool(_LOCATED.search(self.stderr))


@dataclass
class Job:
    """One invocation: ``tool`` is a key of TOOLS, ``args`` its argv with
    ``{in}`` and ``{out}`` standing for the sandbox's input and output."""
    tool: str
    args: list
    data: bytes
    suffix: str
    outputs: tuple = ("out",)


def _tool_main(tool):
    if tool == "tvm-opt":
        from tvmd.tools.opt_main import main
    elif tool == "tvm-translate":
        from tvmd.tools.translate_main import main
    elif tool == "tvm-run":
        from tvmd.tools.run_main import main
    elif tool.startswith("selftest-"):
        return _SELFTESTS[tool]
    else:
        raise KeyError(tool)
    return main


def _selftest_crash(argv):
    os.kill(os.getpid(), signal.SIGSEGV)


def _selftest_hang(argv):
    while True:
        pass


def _selftest_traceback(argv):
    return {}["missing"]


def _selftest_memory(argv):
    return bytearray(1 << 40)


def _selftest_stray(argv):
    with open("elsewhere.txt", "w") as fh:
        fh.write("x")
    return 0


def _selftest_diagnostic(argv):
    sys.stderr.write("in.relay:1:1: error: bad\n")
    return 1


def _selftest_quote(argv):
    """A diagnostic quoting a source line that itself reads like a bug report."""
    sys.stderr.write("in.relay:2:1: error: bad\nerror: internal error: Traceback (most recent call last)\n^\n")
    return 1


def _selftest_boom(argv):
    """A traceback when the input holds BOOM: what the minimiser's test shrinks."""
    with open(argv[0], encoding="utf-8", errors="replace") as fh:
        if "BOOM" in fh.read():
            raise RuntimeError("boom")
    return _selftest_diagnostic(argv)


_SELFTESTS = {f"selftest-{k}": v for k, v in {
    "crash": _selftest_crash, "hang": _selftest_hang, "traceback": _selftest_traceback,
    "memory": _selftest_memory, "stray": _selftest_stray, "diagnostic": _selftest_diagnostic,
    "boom": _selftest_boom, "quote": _selftest_quote,
}.items()}


def warm_up():
    """Import what every child needs, once, in the parent: the tools, the
    parser's grammar, LLVM.  Children then start warm."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # no thread pool to fork
    os.environ.setdefault("TVMD_NUM_THREADS", "1")
    for t in ("tvm-opt", "tvm-translate", "tvm-run"):
        _tool_main(t)
    from tvmd.parser import parse_module
    from tvmd.parser.grammar import get_parser
    get_parser()
    parse_module("relay.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  return %x\n}\n")
    import llvmlite.binding as llvm
    try:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
    except Exception:   # newer llvmlite initialises itself
        pass
    import numpy  # noqa: F401
    try:
        import onnx  # noqa: F401
    except ImportError:
        pass


class Runner:
    """Runs jobs in forked children, up to ``workers`` at once."""

    def __init__(self, root, timeout=20.0, mem_mb=3072, workers=None):
        self.root = root
        self.timeout = timeout
        self.mem_mb = mem_mb
        self.workers = workers or max(1, os.cpu_count() or 1)
        self.count = 0
        os.makedirs(root, exist_ok=True)

    # -- the child ---------------------------------------------------------

    def _child(self, job, box):
        try:
            os.setpgid(0, 0)
            os.chdir(box)
            inp = "in" + job.suffix
            with open(inp, "wb") as fh:
                fh.write(job.data)
            argv = [a.replace("{in}", inp).replace("{out}", "out") for a in job.args]
            null = os.open(os.devnull, os.O_RDWR)
            err = os.open("stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.dup2(err, 2)
            # the parent's sys.stderr may not be fd 2 (pytest captures it)
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False, errors="backslashreplace")
            mem = self.mem_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
            cpu = int(self.timeout) + 5
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
            resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, 1 << 30))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            import faulthandler
            faulthandler.disable()   # pytest's would write to the parent's stderr
            main = _tool_main(job.tool)
            try:
                rc = main(argv)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:
                import traceback
                traceback.print_exc()
                rc = 70
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except Exception:
                pass
            os._exit((rc or 0) & 0xFF)
        except BaseException:
            os._exit(71)

    # -- the parent --------------------------------------------------------

    def _start(self, job):
        self.count += 1
        box = os.path.join(self.root, f"run{self.count}")
        os.makedirs(box)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self._child(job, box)
        return pid, box, time.monotonic()

    def run_many(self, jobs):
        """Yield (job, Outcome) as the runs finish (not in order)."""
        jobs = iter(jobs)
        live = {}
        exhausted = False
        while live or not exhausted:
            while not exhausted and len(live) < self.workers:
                job = next(jobs, None)
                if job is None:
                    exhausted = True
                    break
                pid, box, t0 = self._start(job)
                live[pid] = (job, box, t0, False)
            done = False
            while live and not done:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid:
                    job, box, t0, killed = live.pop(pid)
                    yield job, self._classify(job, box, status, time.monotonic() - t0, killed)
                    done = True
                    continue
                now = time.monotonic()
                for p, (job, box, t0, killed) in list(live.items()):
                    if not killed and now - t0 > self.timeout:
                        try:
                            os.killpg(p, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                        live[p] = (job, box, t0, True)
                time.sleep(0.002)

    def run(self, job):
        return next(iter(self.run_many([job])))[1]

    # -- classification ----------------------------------------------------

    def _classify(self, job, box, status, seconds, killed):
        try:
            with open(os.path.join(box, "stderr.txt"), "rb") as fh:
                stderr = fh.read(200_000).decode("utf-8", "replace")
        except OSError:
            stderr = ""
        expected = {"in" + job.suffix, "stderr.txt"} | set(job.outputs)
        stray = []
        for dirpath, dirs, files in os.walk(box):
            for f in files:
                rel = os.path.relpath(os.path.join(dirpath, f), box)
                if rel not in expected and not any(rel.startswith(o + os.sep) for o in job.outputs):
                    stray.append(rel)
        shutil.rmtree(box, ignore_errors=True)
        out = Outcome(kind="ok", seconds=seconds, stderr=stderr, stray=sorted(stray))
        stderr = without_source_lines(stderr)
        if os.WIFSIGNALED(status):
            out.signal = os.WTERMSIG(status)
            if killed or out.signal == signal.SIGXCPU:
                out.kind = "hang"
            elif out.signal == signal.SIGXFSZ:
                out.kind = "memory"
            else:
                out.kind = "crash"
        else:
            out.rc = os.WEXITSTATUS(status)
            tb = re.search(r"^Traceback \(most recent call last\)", stderr, re.M)
            if re.search(r"^(MemoryError\b|error: .*MemoryError)|std::bad_alloc", stderr, re.M):
                out.kind = "memory"
            elif tb:
                out.kind = "traceback"
            elif re.search(r"^(\S+:\d+:\d+: )?error: internal error", stderr, re.M):
                out.kind = "internal"
            elif stray:
                out.kind = "stray"
            elif out.rc == 0:
                out.kind = "ok"
            elif out.rc == 1 and "error:" in stderr:
                out.kind = "diagnostic"
            elif out.rc == 1 and not stderr.strip():
                out.kind = "silent"
            else:
                out.kind = "other"
        out.signature = signature(job, out)
        return out


def without_source_lines(stderr):
    """stderr without the source lines diagnostics quote (each one is followed
    by its caret line): a mutant's text may say "internal error" itself."""
    lines = stderr.splitlines()
    keep = [ln for i, ln in enumerate(lines)
            if not (i + 1 < len(lines) and re.fullmatch(r"\s*\^[~^]*\s*", lines[i + 1]))]
    return "\n".join(keep)


def signature(job, out):
    """What identifies a finding: its kind and where it happened."""
    if out.kind in ("ok", "diagnostic"):
        return out.kind
    text = without_source_lines(out.stderr)
    m = _INTERNAL_AT.search(text)
    if out.kind in ("traceback", "memory") and m and not _FRAME.search(text):
        return f"{out.kind}: {m.group(1)} at {os.path.basename(m.group(2))} ({m.group(3)})"
    if out.kind in ("traceback", "memory"):
        frames = _FRAME.findall(text)
        excs = _EXC_LINE.findall(text)
        where = ""
        if frames:
            f, line, fn = frames[-1]
            where = f"{os.path.basename(f)}:{line} ({fn})"
        return f"{out.kind}: {excs[-1] if excs else '?'} at {where}"
    if out.kind == "internal":
        if m:
            return f"internal: {m.group(1)} at {os.path.basename(m.group(2))} ({m.group(3)})"
        line = next((ln for ln in text.splitlines() if "internal error" in ln), "")
        return "internal: " + re.sub(r"\d+", "N", line)[:120]
    if out.kind in ("crash",):
        return f"crash: signal {out.signal} in {job.tool} {' '.join(a for a in job.args if a.startswith('-'))}"
    if out.kind == "hang":
        return f"hang: {job.tool} {' '.join(a for a in job.args if a.startswith('-'))}"
    if out.kind == "stray":
        return f"stray: {job.tool} wrote {out.stray[0]}"
    return f"{out.kind}: {job.tool} rc={out.rc}"
