"""Tuning logs: AutoTVM v0.2 JSON lines.

One measured config per line::

    {"input": [TARGET, TASK, ARGS, KWARGS],
     "config": {"index": I, "code_hash": H, "entity": [[KNOB, KIND, VALUE], ...]},
     "result": [COSTS, ERROR_NO, ALL_COST, TIMESTAMP],
     "version": 0.2, "tvm_version": "0.8.dev0", "tvmd_version": "0.1.0"}

as classic AutoTVM wrote them: TARGET is the target string (``llvm
-mcpu=znver4``: the CPU is spelled out, so a log from another machine is
recognised), TASK the task's name, ARGS its arguments (``["TENSOR", SHAPE,
DTYPE]`` for a tensor), COSTS the seconds of each repeat (``[1e9]`` when the
config failed), ERROR_NO one of :class:`ErrorNo`, ALL_COST the seconds the
measurement took, build included.  KIND is AutoTVM's: ``ot`` a plain knob,
``sp`` a split, ``re`` a reorder, ``an`` an annotation.  CODE_HASH is ours
to fill: a hash of the template's text, so that a record never applies to a
template that changed since it was measured.

:class:`LogWriter` appends and flushes each record, so a killed run keeps
every record it measured; :func:`load` reads a log back, refusing a bad line
as a located error.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

VERSION = 0.2
TVM_VERSION = "0.8.dev0"   # the AutoTVM whose format this is
FAILED_COST = 1e9


class ErrorNo:
    """AutoTVM's MeasureErrorNo."""
    NO_ERROR = 0
    INSTANTIATION_ERROR = 1   # the config does not make a valid schedule
    COMPILE_HOST = 2          # lowering or code generation failed
    COMPILE_DEVICE = 3
    RUNTIME_DEVICE = 4        # the kernel crashed or raised
    WRONG_ANSWER = 5          # output differs from the default config's
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8

    NAMES = {0: "ok", 1: "instantiation error", 2: "compile error", 3: "device compile error",
             4: "runtime error", 5: "wrong answer", 6: "build timeout", 7: "run timeout",
             8: "unknown error"}


@dataclass
class Record:
    target: str
    task: str
    args: list
    index: int
    entity: list                 # [[name, kind, value], ...]
    costs: list
    error_no: int = ErrorNo.NO_ERROR
    all_cost: float = 0.0
    timestamp: float = 0.0
    code_hash: str | None = None
    kwargs: dict = field(default_factory=dict)
    error_msg: str | None = None   # ours: why it failed, in one line

    @property
    def workload(self) -> str:
        """The key records of one task share: its name and arguments."""
        return workload_key(self.task, self.args)

    @property
    def ok(self) -> bool:
        return self.error_no == ErrorNo.NO_ERROR

    @property
    def mean_cost(self) -> float:
        return sum(self.costs) / len(self.costs) if self.ok and self.costs else FAILED_COST

    def values(self) -> dict:
        return {name: _thaw(value) for name, _kind, value in self.entity}

    def to_json(self) -> str:
        from .. import __version__
        d = {"input": [self.target, self.task, self.args, self.kwargs],
             "config": {"index": self.index, "code_hash": self.code_hash, "entity": self.entity},
             "result": [self.costs, self.error_no, self.all_cost, self.timestamp],
             "version": VERSION, "tvm_version": TVM_VERSION, "tvmd_version": __version__}
        if self.error_msg:
            d["error_msg"] = self.error_msg
        return json.dumps(d)

    @classmethod
    def from_json(cls, line: str) -> "Record":
        d = json.loads(line)
        if not isinstance(d, dict):
            raise ValueError("a record is a JSON object")
        if d.get("v", d.get("version")) not in (0.1, 0.2):
            raise ValueError(f"unknown log version {d.get('version')!r} (this reads AutoTVM v0.2)")
        target, task, args, kwargs = d["input"]
        cfg, res = d["config"], d["result"]
        costs, error_no, all_cost, ts = res
        entity = cfg.get("entity", [])
        if not (isinstance(target, str) and isinstance(task, str) and isinstance(args, list)
                and isinstance(cfg.get("index"), int) and isinstance(entity, list)
                and isinstance(costs, list) and isinstance(error_no, int)):
            raise ValueError("a field has the wrong type")
        for e in entity:
            if not (isinstance(e, list) and len(e) == 3 and isinstance(e[0], str)):
                raise ValueError(f"bad knob entry {e!r} (expected [name, kind, value])")
        return cls(target, task, args, cfg["index"], entity, [float(c) for c in costs], error_no,
                   float(all_cost), float(ts), cfg.get("code_hash"), kwargs or {}, d.get("error_msg"))


def workload_key(task: str, args) -> str:
    return json.dumps([task, args], separators=(",", ":"))


def _thaw(value):
    """JSON lists back to the tuples a space's candidates are."""
    return tuple(_thaw(v) for v in value) if isinstance(value, list) else value


def entity_json(values: dict, kinds: dict) -> list:
    def freeze(v):
        return [freeze(x) for x in v] if isinstance(v, tuple) else v
    return [[name, kinds.get(name, "ot"), freeze(v)] for name, v in values.items()]


def load(path) -> list[Record]:
    """Every record of a log.  An unreadable file, or a line that is not a
    record, is a DiagnosticError at that line."""
    from ..ir.diagnostics import DiagnosticError
    from ..ir.location import FileLoc
    from ..parser import read_source
    name, text = read_source(str(path))
    out = []
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(Record.from_json(line))
        except json.JSONDecodeError as e:
            if n == len(lines):   # no newline after it: a run killed while writing it
                from ..ir.diagnostics import warning
                warning(FileLoc(name, n, 1), "ignoring the unfinished last line (a run was killed while "
                                             "writing it); --resume drops it")
                continue
            raise DiagnosticError(FileLoc(name, n, e.colno), f"not an AutoTVM v0.2 record: {e.msg}") from None
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            why = e.args[0] if isinstance(e, ValueError) and e.args else f"a missing or bad field ({e})"
            raise DiagnosticError(FileLoc(name, n, 1), f"not an AutoTVM v0.2 record: {why}") from None
        except RecursionError:
            raise DiagnosticError(FileLoc(name, n, 1), "not an AutoTVM v0.2 record: nested too deeply") from None
    return out


class LogWriter:
    """Appends records to a log, flushing each one to the disk."""

    def __init__(self, path):
        self.path = path
        self.f = open(path, "a+", encoding="utf-8")
        self._drop_unfinished_line()

    def _drop_unfinished_line(self):
        """A run killed mid-write leaves a line without its newline: cut it,
        so the records appended next start on a line of their own."""
        end = self.f.seek(0, os.SEEK_END)
        if end == 0:
            return
        with open(self.path, "rb") as f:
            f.seek(max(0, end - (1 << 20)))
            tail = f.read()
        if tail.endswith(b"\n"):
            return
        cut = tail.rfind(b"\n")
        keep = end - len(tail) + cut + 1 if cut >= 0 else (0 if end <= 1 << 20 else end)
        if keep != end:
            self.f.truncate(keep)
            self.f.seek(keep)

    def write(self, record: Record):
        self.f.write(record.to_json() + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self):
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def best_by_workload(records, target: str | None = None, key=None) -> dict:
    """The fastest successful config per workload: `key(record)`, by default
    (target, workload).  A config measured more than once (tvm-tune measures
    its best ones again, tune_tasks' `confirm`) counts by the mean of its
    measurements, so one lucky timing does not make it the best; the record
    given for it is its last."""
    key = key or (lambda r: (r.target, r.workload))
    configs = {}    # (key, code hash, index) -> [sum of costs, measurements, last record]
    for r in records:
        if not r.ok or (target is not None and r.target != target):
            continue
        c = configs.setdefault((key(r), r.code_hash, r.index), [0.0, 0, r])
        c[0] += r.mean_cost
        c[1] += 1
        c[2] = r
    best = {}
    for (k, _hash, _index), (total, n, r) in configs.items():
        if k not in best or total / n < best[k][0]:
            best[k] = (total / n, r)
    return {k: r for k, (_cost, r) in best.items()}


def pick_best(records) -> list[Record]:
    """The best record of each workload and target, in order of first appearance."""
    return list(best_by_workload(records).values())
