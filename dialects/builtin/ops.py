"""``builtin.module``: a symbol table of functions.

Custom form::

    module @name attributes {key = value} {
      ...
    }

A file without a ``module`` is an implicit module holding its ops.
"""

from __future__ import annotations

from ...ir.core import Block, Operation, Region
from ...ir.printer import print_symbol
from ...ir.traits import ISOLATED_FROM_ABOVE, NO_TERMINATOR, SINGLE_BLOCK, SYMBOL_TABLE


class ModuleOp(Operation):
    __slots__ = ()
    name = "builtin.module"
    OPERANDS = ()
    RESULTS = ()
    NUM_REGIONS = 1
    traits = frozenset({ISOLATED_FROM_ABOVE, NO_TERMINATOR, SYMBOL_TABLE, SINGLE_BLOCK})

    @classmethod
    def create_empty(cls, attributes=None):
        return cls((), (), attributes or {}, [Region([Block()])])

    def verify_(self):
        if len(self.region.blocks) != 1:
            raise self.error("expects one block")
        if self.body.args:
            raise self.error("block may not have arguments")

    def print_custom(self, p):
        p.write("module")
        name = self.attributes.get("sym_name")
        if name is not None:
            p.write(" " + print_symbol(name))
        rest = {k: v for k, v in self.attributes.items() if k != "sym_name"}
        if rest:
            p.write(" attributes " + p.attr_dict(rest))
        p.write(" ")
        p.print_region(self.region, isolated=True)

    def functions(self, kind=None):
        """The ops in the module body, optionally only those named `kind`."""
        return [op for op in self.body.ops if kind is None or op.name == kind]

    def lookup(self, name: str):
        for op in self.body.ops:
            if op.attributes.get("sym_name") == name:
                return op
        return None
