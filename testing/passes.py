"""Passes that exist to test the pass manager's failure paths (as MLIR's
``-test-*`` passes do).  They are registered but not listed in --help.

* ``test-fail``: reports a user-level error at the first op it finds
  (after renaming that op's first result, so the dump shows the change).
* ``test-crash``: changes the IR, then raises an internal error (a bug).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.diagnostics import DiagnosticError
from ..ir.pass_manager import ModulePass


def _first_named_op(module):
    for op in module.walk(include_self=False):
        if op.results:
            return op
    return None


@dataclass
class TestFail(ModulePass):
    NAME = "test-fail"
    message: str = "test-fail was asked to fail here"

    def run(self, module, ctx):
        op = _first_named_op(module)
        if op is None:
            return
        op.results[0].name = "touched_by_test_fail"
        raise DiagnosticError(op.loc, self.message)


@dataclass
class TestCrash(ModulePass):
    NAME = "test-crash"

    def run(self, module, ctx):
        op = _first_named_op(module)
        if op is not None:
            op.results[0].name = "touched_by_test_crash"
        raise ZeroDivisionError("test-crash crashes on purpose")
