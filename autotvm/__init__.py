"""AutoTVM: templates with knobs, their config space, tasks, tuners,
measurement, tuning logs and applying them.

``space`` holds the knob syntax (``#tune.knob<"NAME", [C...], D>``) and the
config space of a te template; ``tvm-tune --space template.te`` prints it.

Classic AutoTVM's Python names (``from tvmd import autotvm``):
``autotvm.template``, ``get_config``, ``apply_history_best``,
``ApplyHistoryBest`` (template.py), ``measure_option``, ``LocalBuilder``,
``LocalRunner`` (measure_option.py), and the modules ``task``
(``task.create``), ``tuner``, ``callback``, ``record``, ``measure``.
The two small modules whose names are also functions' (``template``,
``measure_option``) import only the standard library and are bound here
at once, so the names are the functions whatever is imported later; the
rest is imported on first use (``import tvmd.autotvm`` stays cheap).
"""

from .measure_option import LocalBuilder, LocalRunner, measure_option
from .template import ApplyHistoryBest, apply_history_best, get_config, template

_SUBMODULES = frozenset({"task", "tuner", "callback", "record", "measure", "space", "dispatch", "config",
                         "features", "extract"})


def __getattr__(name):
    if name in _SUBMODULES:
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["template", "get_config", "apply_history_best", "ApplyHistoryBest", "measure_option",
           "LocalBuilder", "LocalRunner", "task", "tuner", "callback", "record", "measure"]
