"""``relay.ScopeBuilder``: classic TVM's builder of let chains and if/else.

    sb = relay.ScopeBuilder()
    t = sb.let("t", relay.add(x, y))          # a let binding; returns its var
    with sb.if_scope(cond):                   # cond: a scalar bool
        sb.ret(t)
    with sb.else_scope():
        sb.ret(relay.negative(t))
    body = sb.get()                           # Let(t, x + y, If(cond, t, -t))

Each scope keeps its bindings and its result (``ret``); leaving an
``else_scope`` makes ``If(cond, then, else)`` the result of the scope
around it, as TVM's builder does.  ``get`` wraps the result in the lets.
"""

from __future__ import annotations

import contextlib

from ..expr import TVMError
from .expr import If, Let, Var


class ScopeBuilder:
    def __init__(self):
        self._bindings = [[]]
        self._ret_values = [None]
        self._pending_if = None      # (cond, then expression) after an if_scope

    def _enter(self):
        self._bindings.append([])
        self._ret_values.append(None)

    def _exit(self):
        bindings, ret = self._bindings.pop(), self._ret_values.pop()
        if ret is None:
            raise TVMError("a ScopeBuilder scope ended without sb.ret(value)")
        for var, value in reversed(bindings):
            ret = Let(var, value, ret)
        return ret

    def let(self, var, value):
        """Bind `value` to `var` (a Var, a name, or (name, type)) in this scope; returns the Var."""
        if isinstance(var, str):
            var = Var(var, None)
        elif isinstance(var, (tuple, list)):
            var = Var(var[0], var[1])
        self._bindings[-1].append((var, value))
        return var

    @contextlib.contextmanager
    def if_scope(self, cond):
        """The then branch; an ``else_scope`` must follow."""
        if self._pending_if is not None:
            raise TVMError("ScopeBuilder: an if_scope needs its else_scope before the next if_scope")
        self._enter()
        yield
        self._pending_if = (cond, self._exit())

    @contextlib.contextmanager
    def else_scope(self):
        """The else branch of the if_scope just left."""
        if self._pending_if is None:
            raise TVMError("ScopeBuilder: else_scope without an if_scope before it")
        cond, then = self._pending_if
        self._pending_if = None
        self._enter()
        yield
        other = self._exit()
        self.ret(If(cond, then, other))

    def ret(self, value):
        """The result of the current scope (once)."""
        if self._ret_values[-1] is not None:
            raise TVMError("ScopeBuilder: ret was already called in this scope")
        self._ret_values[-1] = value

    def get(self):
        """The expression: the outer scope's lets around its result."""
        if self._pending_if is not None:
            raise TVMError("ScopeBuilder: an if_scope has no else_scope")
        if len(self._bindings) != 1:
            raise TVMError("ScopeBuilder.get() inside a scope")
        bindings, ret = self._bindings[0], self._ret_values[0]
        if ret is None:
            raise TVMError("ScopeBuilder.get() before sb.ret(value)")
        for var, value in reversed(bindings):
            ret = Let(var, value, ret)
        return ret
