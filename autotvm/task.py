"""Tuning tasks: one per workload.

A task is a template (a te.func with knobs) for one target.  Its
**workload** is what a tuning record is filed under, AutoTVM's
``(task name, args)``: the name is the func's ``task`` attribute when it
has one (``te.func @f(...) attributes {task = "matmul"}``), else its
symbol less a uniquing suffix ``_N``; the args are its parameters as ``["TENSOR", SHAPE, DTYPE]``.  Two
kernels with the same workload share one task.  The task's ``code_hash`` is
a hash of the template's text (its symbol and SSA names left out), so a
record measured on another template of the same name and shapes never
applies.

Tasks travel to measurement workers as text: :meth:`Task.instantiate`
parses the template and writes one config's values in place of its knobs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from .record import workload_key
from .template import ApplyConfig  # noqa: F401  (classic AutoTVM's autotvm.task.ApplyConfig)

FLOAT_OPS = {"arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.maximumf", "arith.minimumf",
             "arith.negf", "arith.fma"}


@dataclass
class Task:
    name: str
    args: list
    target: str
    text: str                 # the te.func, knobs and all, printed alone
    code_hash: str
    flop: int = 0
    build_target: str = ""    # what code is generated for (the user's string: "llvm" is the host
                              # with all its features; `target` only names the CPU)
    space: object = field(default=None, repr=False, compare=False)   # its ConfigSpace, parsed once

    @property
    def workload(self) -> str:
        return workload_key(self.name, self.args)

    @property
    def config_space(self):
        if self.space is None:
            from ..parser import parse_module
            from .space import templates
            (_, self.space), = templates(parse_module(self.text, f"<task {self.name}>"))
        return self.space

    def instantiate(self, index: int):
        """A module holding the template with config `index` written in."""
        from ..parser import parse_module
        from .space import templates
        m = parse_module(self.text, f"<task {self.name}>")
        (_, space), = templates(m)
        from .space import instantiate
        instantiate(space, space.get(index))
        return m

    def payload(self, index: int):
        """What a build worker is sent to build config `index`: (a
        picklable task, index).  A task whose template is not text (a
        Python template, autotvm/template.py) sends its config instantiated
        here, in the tuner's process, where its code lives."""
        return self, index

    def __getstate__(self):
        d = dict(self.__dict__)
        d["space"] = None   # workers parse the text again
        return d


def canonical_target(target: str | None) -> str:
    """The target string a record is filed under: the host CPU spelled out
    (``llvm`` on this machine is ``llvm -mcpu=znver4``), so a log tuned on
    another CPU is told apart."""
    from ..backend.spec import parse_target
    t = parse_target(target or "llvm")
    if t.kind == "llvm" and t.mcpu in (None, "native"):
        from ..backend.llvm.target import LLVMTarget
        _, cpu, _ = t.resolved()
        t = LLVMTarget(t.triple, cpu, t.mattr)
    return str(t)


def dtype_name(element_type) -> str:
    from ..ir.types import to_numpy_dtype
    import numpy as np
    return np.dtype(to_numpy_dtype(element_type)).name


def tensor_args(func) -> list:
    from ..ir import types as T
    out = []
    for a in func.args:
        t = a.type
        if isinstance(t, T.TensorType):
            out.append(["TENSOR", list(t.shape), dtype_name(t.element_type)])
        else:
            out.append(str(t))
    return out


def estimate_flop(func) -> int:
    """Floating-point operations of the template's computes: per output
    element, its float arithmetic and one combine per reduction step."""
    from ..dialects.te.ops import ComputeOp
    total = 0
    for op in func.body.ops:
        if not isinstance(op, ComputeOp):
            continue
        t = op.results[0].type
        n = 1
        for d in t.shape:
            n *= d or 1
        for e in op.attributes.get("reduce_extents") or ():
            n *= e
        body = sum(1 for o in op.walk() if o.name in FLOAT_OPS)
        if op.attributes.get("reducer"):
            body += 1
        total += n * max(body, 1)
    return total


def task_name(func) -> str:
    """The func's ``task`` attribute, else its symbol less a uniquing
    suffix (``fused_nn_conv2d_1`` is a ``fused_nn_conv2d``)."""
    name = func.attributes.get("task")
    if name:
        return str(name)
    return re.sub(r"_\d+$", "", func.attributes["sym_name"]) or func.attributes["sym_name"]


def code_hash(func) -> str:
    """A hash of the template's text with its symbol and SSA names left
    out: two kernels that differ only in names hash the same."""
    from ..ir.printer import print_op
    anon = func.clone()
    anon.attributes["sym_name"] = "_"
    for op in anon.walk():
        for r in op.results:
            r.name = None
        for region in op.regions:
            for block in region.blocks:
                for a in block.args:
                    a.name = None
    return hashlib.sha256(print_op(anon).encode()).hexdigest()[:16]


def task_of(func, target: str, build_target: str = "") -> Task:
    """The task of one template (a te.func with knobs)."""
    from ..ir.printer import print_op
    return Task(task_name(func), tensor_args(func), target, print_op(func), code_hash(func), estimate_flop(func),
                build_target or target)


def extract_tasks(module, target: str | None = None) -> tuple[list[Task], dict]:
    """The distinct tasks of a module's templates, in order, and for each
    template symbol the task it belongs to."""
    from .space import templates
    build_target = target or "llvm"
    target = canonical_target(build_target)
    tasks, by_key, of_func = [], {}, {}
    for func, _space in templates(module):
        t = task_of(func, target, build_target)
        key = (t.workload, t.code_hash)
        if key not in by_key:
            by_key[key] = t
            tasks.append(t)
        of_func[func.attributes["sym_name"]] = by_key[key]
    return tasks, of_func


# ---- Python templates (classic AutoTVM: autotvm/template.py) -----------------

def serialize_args(args) -> list:
    """A template call's args as a workload records them: tensors as
    ``["TENSOR", SHAPE, DTYPE]``, tuples as lists, numbers and strings as
    they are."""
    def one(a):
        if a is None or isinstance(a, (bool, int, float, str)):
            return a
        if isinstance(a, (tuple, list)):
            return [one(x) for x in a]
        if hasattr(a, "shape") and hasattr(a, "dtype") and hasattr(a, "op"):
            return ["TENSOR", [int(d) for d in a.shape], str(a.dtype)]
        raise TypeError(f"a template's args must be numbers, strings, tuples or tensors (its workload), "
                        f"got {a!r}")
    return [one(a) for a in args]


@dataclass
class InstantiatedTask(Task):
    """What a Python template's config is sent to a build worker as: its
    module text (one config's schedule, no knobs), built as config 0."""

    def instantiate(self, index: int):
        from ..parser import parse_module
        return parse_module(self.text, f"<task {self.name}>")


@dataclass
class PythonTask(Task):
    """A task whose template is a Python function (``@autotvm.template``).

    The space is collected by calling the function once; a config is
    instantiated by calling it again with that config (here, in the
    tuner's process: build workers import nothing of the user's script),
    and sent to the worker as text (:meth:`payload`).  ``text`` is the
    default config's module."""
    template_args: tuple = ()
    func: object = field(default=None, repr=False, compare=False)

    def _call(self, cfg):
        from ..classic.target import Target
        from .template import applying
        with applying(cfg), Target(self.build_target):
            out = self.func(*self.template_args)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(f"template '{self.name}' must return (schedule, [tensors]), got {out!r}")
        s, bufs = out
        return s.emit(list(bufs), re.sub(r"\W", "_", self.name) or "main")

    def instantiate(self, index: int):
        """The module of config `index` (a te.func with a plain schedule);
        a config the template rejects raises (cfg.raise_error:
        InstantiationError)."""
        from .config import InstantiationError, TemplateConfig
        cfg = TemplateConfig(self.config_space, self.config_space.get(index))
        m = self._call(cfg)
        if cfg.errors:
            raise InstantiationError("; ".join(cfg.errors))
        return m

    def payload(self, index: int):
        from ..ir.printer import print_module
        text = print_module(self.instantiate(index))
        return InstantiatedTask(self.name, self.args, self.target, text, self.code_hash, self.flop,
                                self.build_target), 0

    def __getstate__(self):
        raise TypeError(f"task '{self.name}' has a Python template: it cannot leave this process "
                        f"(its configs are sent to workers instantiated, as text: payload())")


def create(task_name, args, target="llvm", target_host=None):
    """``autotvm.task.create("tutorial/matmul", args=(N, L, M, "float32"),
    target="llvm")``: the task of a registered Python template (or of the
    decorated function itself) for one workload and target."""
    from .config import TemplateConfig
    from .space import ConfigSpace
    from .template import lookup
    func = getattr(task_name, "func", None)
    if func is not None:               # the decorated function
        task_name = task_name.template_name
    else:
        func = lookup(task_name)
    build_target = str(target) if target is not None else "llvm"
    args = tuple(args)
    task = PythonTask(task_name, serialize_args(args), canonical_target(build_target), "", None,
                      build_target=build_target, template_args=args, func=func)
    space = ConfigSpace(None, [])
    cfg = TemplateConfig(space, is_fallback=False)
    m = task._call(cfg)
    from ..ir.printer import print_module
    task.space = space
    task.text = print_module(m)
    te_func = next(op for op in m.body.ops if op.name == "te.func")
    task.flop = int(cfg.flop) if cfg.flop else estimate_flop(te_func)
    task.code_hash = python_code_hash(func, space)
    return task


def python_code_hash(func, space) -> str | None:
    """A hash of the template function's source and of its config space
    (knob names, kinds, candidates): a record never applies to a template
    whose code or space changed since it was measured.  None when the
    source cannot be read (a function made by exec): records are then taken
    on trust, as classic AutoTVM's."""
    import inspect
    import textwrap
    try:
        src = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        return None
    knobs = repr([(k.name, k.kind, k.candidates) for k in space.knobs])
    return hashlib.sha256((src + "\n" + knobs).encode()).hexdigest()[:16]
