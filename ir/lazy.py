"""Lazy module imports for modules on the tools' start-up path.

``np = lazy_module("numpy")`` costs nothing until an attribute is used;
the first use imports numpy and caches the attribute on the proxy, so later
uses are plain attribute lookups.  Op definitions use it so that parsing
and printing IR never pay for numpy unless a constant needs it.
"""

from __future__ import annotations

import importlib


class LazyModule:
    def __init__(self, name: str):
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attr):
        mod = importlib.import_module(self.__dict__["_lazy_name"])
        val = getattr(mod, attr)
        self.__dict__[attr] = val
        return val


def lazy_module(name: str) -> LazyModule:
    return LazyModule(name)


def np_function(name: str):
    """A function that calls ``numpy.<name>`` (imported on the first call)."""
    np = lazy_module("numpy")

    def call(*args, **kw):
        return getattr(np, name)(*args, **kw)
    call.__name__ = name
    call.__qualname__ = f"numpy.{name}"
    return call
