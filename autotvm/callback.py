"""Callbacks of the tuning loop, ``cb(tuner, inputs, results)``.

    log_to_file(path)        append each record to a log (flushed per record)
    progress_bar(total)      AutoTVM's progress line, rewritten in place on a
                             terminal and silent when stderr is piped:
      [Task  3/12] Current/Best:  150.2/ 201.7 GFLOPS | Progress: (400/1000) | 63.2 s
"""

from __future__ import annotations

import sys
import time

from .record import LogWriter


def log_to_file(path_or_writer):
    writer = path_or_writer if isinstance(path_or_writer, LogWriter) else LogWriter(path_or_writer)

    def cb(_tuner, _inputs, results):
        for r in results:
            writer.write(r)
    cb.writer = writer
    return cb


def gflops(task, record) -> float:
    return task.flop / record.mean_cost / 1e9 if record.ok and record.mean_cost > 0 else 0.0


def progress_bar(total: int, prefix: str = "", stream=None, done: int = 0):
    """`done`: trials counted before this run (a resumed log's)."""
    stream = stream or sys.stderr
    isatty = getattr(stream, "isatty", None)
    tty = bool(isatty and isatty())
    state = {"t0": time.perf_counter(), "n": done, "cur": 0.0, "width": 0}

    def cb(tuner, _inputs, results):
        if tuner.confirming:   # the best configs measured again: not trials
            return
        state["n"] += len(results)
        for r in results:
            state["cur"] = gflops(tuner.task, r)
        if not tty:
            return
        best = tuner.best_flops / 1e9
        text = (f"{prefix}Current/Best: {state['cur']:7.2f}/{best:7.2f} GFLOPS | Progress: ({state['n']}/{total}) "
                f"| {time.perf_counter() - state['t0']:.1f} s")
        pad = max(0, state["width"] - len(text))
        state["width"] = len(text)
        stream.write("\r" + text + " " * pad)
        stream.flush()

    def finish():
        if tty and state["width"]:
            stream.write("\n")
            stream.flush()
    cb.finish = finish
    return cb
