"""Passes that exist to test the pass manager's failure paths (as MLIR's
``-test-*`` passes do).  They are registered but not listed in --help.  Both are op-agnostic:
nested under an anchor (``tir.func(test-fail)``) they act inside each op of
that kind.

* ``test-fail``: reports a user-level error at the first op it finds
  (after renaming that op's first result, so the dump shows the change).
* ``test-crash``: changes the IR, then raises an internal error (a bug).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.diagnostics import DiagnosticError
from ..ir.pass_manager import ANY, ModulePass, option


def _first_named_op(root):
    for op in root.walk(include_self=False):
        if op.results:
            return op
    return None


@dataclass
class TestFail(ModulePass):
    """Report an error at the first op with a result."""

    NAME = "test-fail"
    OP = ANY
    message: str = option("test-fail was asked to fail here", "the error message to report")

    def run_on(self, root, ctx):
        op = _first_named_op(root)
        if op is None:
            return
        op.results[0].name = "touched_by_test_fail"
        raise DiagnosticError(op.loc, self.message)


@dataclass
class TestCrash(ModulePass):
    """Raise an internal error (after renaming the first op's result)."""

    NAME = "test-crash"
    OP = ANY

    def run_on(self, root, ctx):
        op = _first_named_op(root)
        if op is not None:
            op.results[0].name = "touched_by_test_crash"
        raise ZeroDivisionError("test-crash crashes on purpose")
