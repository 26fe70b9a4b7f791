"""Python templates (classic AutoTVM): the decorator, the registry, and
which config a template call gets.

    @autotvm.template("tutorial/matmul")
    def matmul(N, L, M, dtype):
        ...
        cfg = autotvm.get_config()
        cfg.define_split("tile_y", y, num_outputs=2)
        yo, yi = cfg["tile_y"].apply(s, C, y)
        return s, [A, B, C]

    task = autotvm.task.create("tutorial/matmul", args=(512, 512, 512, "float32"), target="llvm")
    with autotvm.apply_history_best("matmul.log"):
        s, bufs = matmul(512, 512, 512, "float32")       # the log's best config

``template(name)`` registers the function under ``name`` (the task name of
its records) and returns a dispatcher.  Calling the dispatcher picks a
config, pushes it where ``get_config()`` finds it, and calls the function:

* inside ``apply_history_best(log)`` (an :class:`ApplyHistoryBest`): the
  best record of the log for the workload (the name and the call's args)
  and the current target (``tvm.target.Target.current()``, else llvm),
  when its code hash matches the template's (autotvm/task.py PythonTask);
* otherwise, or without a record: the fallback config, each knob at its
  first candidate, with one warning line per workload (not per call).

Tasks (``task.create``) call the undecorated function themselves, with the
config to collect the space or the config to instantiate
(:func:`applying`).  The contexts are per thread.
"""

from __future__ import annotations

import contextlib
import functools
import threading

TEMPLATES: dict = {}      # task name -> the undecorated template function
_local = threading.local()
_warned: set = set()      # (target, workload) the fallback line was printed for


def _stack(name):
    s = getattr(_local, name, None)
    if s is None:
        s = []
        setattr(_local, name, s)
    return s


def template(task_name, func=None):
    """``@autotvm.template("name")``: register a template (also
    ``template("name", func)``)."""
    def register(f):
        TEMPLATES[task_name] = f

        @functools.wraps(f)
        def dispatcher(*args, **kwargs):
            if kwargs:
                raise TypeError(f"template '{task_name}': pass its arguments by position (its workload is "
                                f"the positional args), not {sorted(kwargs)}")
            with applying(_dispatch(task_name, args)):
                return f(*args)
        dispatcher.template_name = task_name
        dispatcher.func = f
        return dispatcher
    return register(func) if func is not None else register


def get_config():
    """The config of the template call in progress (a fresh fallback
    config outside any template call)."""
    configs = _stack("configs")
    if configs:
        return configs[-1]
    from .config import TemplateConfig
    from .space import ConfigSpace
    return TemplateConfig(ConfigSpace(None, []), is_fallback=True)


@contextlib.contextmanager
def applying(cfg):
    """``get_config()`` returns `cfg` inside."""
    configs = _stack("configs")
    configs.append(cfg)
    try:
        yield cfg
    finally:
        configs.pop()


def lookup(task_name):
    f = TEMPLATES.get(task_name)
    if f is None:
        known = ", ".join(sorted(TEMPLATES)) or "none"
        raise KeyError(f"no template is registered as '{task_name}' (registered: {known}); decorate it with "
                       f"@autotvm.template(\"{task_name}\")")
    return f


def current_target() -> str:
    from ..classic.target import Target
    t = Target.current()
    return str(t) if t is not None else "llvm"


def _dispatch(task_name, args):
    target = current_target()
    contexts = _stack("contexts")
    why = None
    if contexts:
        cfg, why = contexts[-1].config(task_name, args, target)
        if cfg is not None:
            return cfg
    return fallback(task_name, args, target, why)


def fallback(task_name, args, target, why=None):
    """The fallback config (each knob's first candidate, collected as the
    template defines them), saying so once per workload."""
    from .config import TemplateConfig
    from .space import ConfigSpace
    import json

    from .task import canonical_target, serialize_args
    wl = json.dumps([task_name, serialize_args(args)])
    key = (canonical_target(target), wl)
    if key not in _warned:
        _warned.add(key)
        from ..ir.diagnostics import warning
        from ..ir.location import UNKNOWN
        warning(UNKNOWN, f"autotvm: no tuned config for workload {wl} on '{key[0]}'"
                         f"{'' if why is None else ' (' + why + ')'}; using the template's fallback config")
    return TemplateConfig(ConfigSpace(None, []), is_fallback=True)


class _DispatchContext:
    """A ``with`` block inside which template calls ask this context's
    config(task_name, args, target) for their config."""

    def __enter__(self):
        _stack("contexts").append(self)
        return self

    def __exit__(self, *exc):
        _stack("contexts").remove(self)
        return False


class ApplyHistoryBest(_DispatchContext):
    """``with autotvm.apply_history_best(log):`` template calls inside take
    the best config of `records` (a log path, a list of paths, or records)."""

    def __init__(self, records):
        from .record import Record, load
        if isinstance(records, (str, bytes)) or hasattr(records, "__fspath__"):
            records = [records]
        out, names = [], []
        for r in records:
            if isinstance(r, Record):
                out.append(r)
            else:
                out += load(r)
                names.append(str(r))
        self.records = out
        self.source = ", ".join(names) or "the records given"
        self._history = {}    # canonical target -> HistoryBest
        self._tasks = {}      # (task name, args, target) -> PythonTask


    def config(self, task_name, args, target):
        """(the best config for the call, None) or (None, why there is none)."""
        import json

        from .config import TemplateConfig
        from .dispatch import HistoryBest, config_of
        from .task import create, serialize_args
        key = (task_name, json.dumps(serialize_args(args)), target)
        task = self._tasks.get(key)
        if task is None:
            task = self._tasks[key] = create(task_name, args, target)
        history = self._history.get(task.target)
        if history is None:
            history = self._history[task.target] = HistoryBest(self.records, task.target, self.source)
        r = history.query(task)
        entity = config_of(task.config_space, r) if r is not None else None
        if entity is not None:
            return TemplateConfig(task.config_space, entity), None
        if history.by_workload.get(task.workload):
            return None, f"the records of it in {self.source} were measured on another version of the template"
        return None, f"no record of it in {self.source}"

    def query(self, target, workload):
        """Classic AutoTVM's query: the best config for (task name, *args) on `target`."""
        name, *args = workload
        return self.config(name, tuple(args), str(target) if target is not None else "llvm")[0]


class ApplyConfig(_DispatchContext):
    """``with autotvm.task.ApplyConfig(task.config_space.get(i)):`` template
    calls inside take that one config (classic AutoTVM's way to build a
    chosen config by hand).  A template whose space the config does not
    fit is an error, never a silent fallback."""

    def __init__(self, config):
        self.entity = config


    def config(self, task_name, args, target):
        from .config import TemplateConfig
        from .task import create
        space = create(task_name, args, target).config_space
        values = getattr(self.entity, "values", None)
        if values is None or set(values) != {k.name for k in space.knobs} or any(
                values[k.name] not in k.candidates for k in space.knobs):
            raise ValueError(f"ApplyConfig: {self.entity!r} is not a config of template '{task_name}' "
                             f"(its knobs: {', '.join(k.name for k in space.knobs) or 'none'})")
        return TemplateConfig(space, space.get(space.index_of(values))), None


def apply_history_best(records):
    """``with autotvm.apply_history_best("tune.log"): ...``"""
    return ApplyHistoryBest(records)
