"""``tvmd.target``: ``Target("llvm -mcpu=...")`` / ``Target("cuda")``, a context manager.

    with tvm.target.Target("llvm"):
        assert tvm.target.Target.current().kind.name == "llvm"

The string is parsed by backend/spec.py (``llvm`` with ``-mtriple``,
``-mcpu``, ``-mattr``; ``cuda`` with ``-arch``); ``tvm.build`` uses the
innermost current target when given none.
"""

from __future__ import annotations

import threading

_stack = threading.local()


class TargetKind:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


class Target:
    """A compilation target; ``kind.name`` is ``llvm`` or ``cuda``."""

    def __init__(self, target, host=None):
        from ..backend.spec import TargetError, parse_target
        if isinstance(target, Target):
            self.spec, self.host = target.spec, target.host
            return
        if isinstance(target, dict):
            target = target.get("kind", "")
        try:
            self.spec = parse_target(str(target))
        except TargetError as e:
            raise ValueError(f"bad target '{target}': {e}") from None
        self.host = Target(host) if host is not None and not isinstance(host, Target) else host

    @property
    def kind(self):
        return TargetKind(self.spec.kind)

    @property
    def keys(self):
        return ("cpu",) if self.spec.kind == "llvm" else ("cuda", "gpu")

    @property
    def mcpu(self):
        return getattr(self.spec, "mcpu", None)

    @property
    def arch(self):
        return getattr(self.spec, "arch", None)

    def __enter__(self):
        if not hasattr(_stack, "items"):
            _stack.items = []
        _stack.items.append(self)
        return self

    def __exit__(self, *exc):
        _stack.items.pop()
        return False

    @staticmethod
    def current(allow_none=True):
        items = getattr(_stack, "items", None)
        if items:
            return items[-1]
        if not allow_none:
            raise ValueError("no target is set: use `with tvm.target.Target(...)`")
        return None

    def __str__(self):
        return str(self.spec)

    def __repr__(self):
        return f"Target({str(self.spec)!r})"

    def __eq__(self, other):
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))


def create(target):
    """The old ``tvm.target.create``."""
    return Target(target)


def cuda(model="unknown", arch=None, options=None):
    return Target(f"cuda -arch={arch}" if arch else "cuda")


def arm_cpu(*args, **kwargs):
    raise ValueError("arm_cpu targets are not supported (llvm with -mtriple=... is)")


def as_target(target):
    """A Target from a Target, a string, or None (the current one, else llvm)."""
    if target is None:
        return Target.current() or Target("llvm")
    return target if isinstance(target, Target) else Target(target)
