"""Tuners: which configs of a task to measure next.

    base.py      Tuner: the tuning loop (batches, early stopping, callbacks,
                 resuming from earlier records)
    random.py    RandomTuner: configs drawn without replacement
    grid.py      GridSearchTuner: configs in index order
    ga.py        GATuner: a genetic search over knob values
    xgb.py       XGBTuner: an XGBoost cost model ranks configs, simulated
                 annealing proposes them (sa.py), features in ../features.py
"""

TUNERS = {"random": "RandomTuner", "grid": "GridSearchTuner", "ga": "GATuner", "xgb": "XGBTuner"}
_MODULES = {"RandomTuner": "random", "GridSearchTuner": "grid", "GATuner": "ga", "XGBTuner": "xgb",
            "Tuner": "base"}


def __getattr__(name):
    if name in _MODULES:
        import importlib
        return getattr(importlib.import_module(f".{_MODULES[name]}", __name__), name)
    raise AttributeError(name)


def make_tuner(kind: str, task, **kwargs):
    """The tuner named `kind` (random, grid, ga, xgb) for `task`."""
    return __getattr__(TUNERS[kind])(task, **kwargs)
