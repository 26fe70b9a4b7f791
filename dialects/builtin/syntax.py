"""Parse callbacks for builtin.lark."""

from ...ir.attributes import SymbolRef
from .ops import ModuleOp

GRAMMAR = "builtin.lark"
OP_RULES = ["builtin_module"]


class Syntax:
    def builtin_module_header(self, c):
        attrs = {}
        for x in c[1:]:
            if isinstance(x, dict):
                attrs.update(x)
            else:
                name = x[1:]
                attrs["sym_name"] = name[1:-1] if name.startswith('"') else name
        self.open_op(isolated=True)
        return (c[0], attrs)

    def builtin_module(self, c):
        self.close_op()
        (tok, attrs), region = c
        return self.make_op(ModuleOp, (), (), attrs, [region], tok)


__all__ = ["Syntax", "SymbolRef"]
