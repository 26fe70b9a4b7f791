"""A tuning task whose configs misbehave, for the measurement tests.

``faulty_task()`` has one knob, ``fault``, whose candidates name what the
config does: ``ok`` (the default: B = A * 2), ``faster`` (the same, split and
vectorised), ``wrong`` (B = A * 3), ``hang`` (a reduction of 2^40 steps),
``crash`` (reads far outside A: SIGSEGV), ``badschedule`` (a schedule op on
an axis that does not exist).  Each config's kernel is a real te.func, built
and run by the real workers; the task class lives here, in the package, so
that the worker processes can unpickle it.
"""

from __future__ import annotations

from ..autotvm.task import Task

HEAD = "te.func @faulty(%A: tensor<256xf32>) -> tensor<256xf32> {\n"
KNOB = '  te.pragma %i {fault = #tune.knob<"fault", [{}]>}\n'
FAULTS = ("ok", "faster", "wrong", "hang", "crash", "badschedule")

SCALE = """  %B = te.compute [%i] : tensor<256xf32> {{
    %a = te.read %A[%i] : f32
    %c = arith.constant {c} : f32
    %m = arith.mulf %a, %c : f32
    yield %m
  }}
  %i = te.axes %B
"""
BODIES = {
    "ok": SCALE.format(c="2.0"),
    "faster": SCALE.format(c="2.0") + "  %io, %ii = te.split %i {factor = 8}\n  te.vectorize %ii\n",
    "wrong": SCALE.format(c="3.0"),
    "hang": """  %B = te.compute [%i] reduce [%k: 1099511627776] "sum" : tensor<256xf32> {
    %a = te.read %A[%i] : f32
    yield %a
  }
  %i, %k = te.axes %B
""",
    "crash": """  %B = te.compute [%i] : tensor<256xf32> {
    %big = arith.constant 1000000000000 : index
    %j = arith.addi %i, %big : index
    %a = te.read %A[%j] : f32
    yield %a
  }
  %i = te.axes %B
""",
    "badschedule": SCALE.format(c="2.0") + "  %io, %ii = te.split %i {factor = 8}\n  te.vectorize %i\n",
}


def template_text(fault: str | None = None) -> str:
    """The template (fault=None: with its knob) or one config's plain te.func."""
    body = BODIES[fault or "ok"]
    cands = ", ".join(f'"{f}"' for f in FAULTS)
    knob = KNOB.replace("{}", cands) if fault is None else ""
    return HEAD + body + knob + "  return %B\n}\n"


class FaultyTask(Task):
    def instantiate(self, index: int):
        from ..parser import parse_module
        fault = self.config_space.get(index)["fault"]
        return parse_module(template_text(fault), f"<faulty {fault}>", verify=fault != "badschedule")


def faulty_task(target: str = "llvm") -> FaultyTask:
    from ..parser import parse_module
    from .. autotvm.task import extract_tasks
    (t,), _ = extract_tasks(parse_module(template_text()), target)
    return FaultyTask(**{k: v for k, v in t.__dict__.items() if k != "space"})
