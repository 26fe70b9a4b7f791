"""The printer: canonical text for any IR, custom or generic form.

Values print under their users' names (``%x``), made unique within each
isolated-from-above scope (``%x_1``); unnamed values are numbered ``%0, %1``.
Large constants that are not splats go to a resource section at the end of
the file (a splat prints inline as ``dense<1.0>`` whatever its size)::

    {-#
      dialect_resources: {
        builtin: {
          w0: "0x04000000<little-endian bytes in hex>"
        }
      }
    #-}

The first four bytes are the blob's alignment, as in MLIR.
"""

from __future__ import annotations

import re

from .attributes import UNIT, DenseAttr, print_attr, print_dense, print_key, print_symbol_name
from .core import BlockArgument, Operation, Region, Value
from .traits import ISOLATED_FROM_ABOVE

# Tensors with more elements than this print as resources, not literals
# (splats excepted: they are always one literal element).
INLINE_ELEMENTS = 16

_VALID_NAME = re.compile(r"[A-Za-z_$.\-][\w$.\-]*\Z")


class _Scope:
    """Names defined in one region.  A region's names end at its closing
    brace (as the parser reads them), so sibling regions may reuse a name;
    a nested region may not shadow an enclosing one.  Numbering of unnamed
    values runs on across the whole isolated-from-above op, so ``%3`` means
    one value per function."""

    __slots__ = ("used", "parent", "root", "counter", "suffix")

    def __init__(self, parent=None):
        self.used = set()
        self.parent = parent
        self.root = self if parent is None else parent.root
        self.counter = 0
        self.suffix = {}

    def taken(self, name) -> bool:
        s = self
        while s is not None:
            if name in s.used:
                return True
            s = s.parent
        return False


class Printer:
    def __init__(self, generic=False, debuginfo=False, inline_elements=INLINE_ELEMENTS):
        self.generic = generic
        self.debuginfo = debuginfo
        self.inline_elements = inline_elements
        self.out: list[str] = []
        self.indent = ""
        self.names: dict[Value, str] = {}
        self.scopes = [_Scope()]
        self.resources: dict[str, DenseAttr] = {}
        self._resource_key: dict[int, str] = {}
        self.block_names: dict = {}

    # -- low level ---------------------------------------------------------

    def write(self, s: str):
        self.out.append(s)

    def text(self) -> str:
        return "".join(self.out)

    def newline(self):
        self.out.append("\n")
        self.out.append(self.indent)

    # -- names ---------------------------------------------------------------

    def define(self, v: Value) -> str:
        """Give a newly defined value its printed name."""
        scope = self.scopes[-1]
        root = scope.root
        hint = v.name
        if hint and _VALID_NAME.match(hint) and not hint[0].isdigit():
            name = hint
            if scope.taken(name):
                n = scope.suffix.get(hint, 1)
                while scope.taken(f"{hint}_{n}"):
                    n += 1
                scope.suffix[hint] = n + 1
                name = f"{hint}_{n}"
        else:
            n = root.counter
            while scope.taken(str(n)):
                n += 1
            root.counter = n + 1
            name = str(n)
        scope.used.add(name)
        name = "%" + name
        self.names[v] = name
        return name

    def value(self, v: Value) -> str:
        name = self.names.get(v)
        if name is None:
            # a use printed before its definition (an invalid or graph region)
            name = self.define(v)
        return name

    def values(self, vs) -> str:
        return ", ".join([self.value(v) for v in vs])

    def push_scope(self, isolated=True):
        """Open a naming scope: a fresh one for an isolated-from-above op, or
        a child of the current one for a region that sees outer values.
        Custom printers that show a region's entry arguments in their header
        open the scope before defining them, so the names stay inside."""
        self.scopes.append(_Scope() if isolated else _Scope(self.scopes[-1]))

    def pop_scope(self):
        self.scopes.pop()

    # -- attributes and types -----------------------------------------------

    def attr(self, v) -> str:
        t = type(v)
        if t is DenseAttr:
            return self.dense(v) + " : " + v.type._text
        if t is tuple:
            return "[" + ", ".join([self.attr(x) for x in v]) + "]"
        if isinstance(v, dict):
            return self.attr_dict(v)
        return print_attr(v)

    def dense(self, a: DenseAttr) -> str:
        """``dense<...>`` inline, or ``dense_resource<key>`` for a large one.
        A splat is always inline (``dense<1.0>``), whatever its size: a blob
        would spell out every element."""
        if a.array.size <= self.inline_elements or a.is_splat() or a.array.dtype == object:
            # (strings have no binary blob form: always inline)
            return print_dense(a)
        key = self._resource_key.get(id(a))
        if key is None:
            base = key = a.key or "blob"
            n = 0
            while key in self.resources:
                n += 1
                key = f"{base}_{n}"
            self.resources[key] = a
            self._resource_key[id(a)] = key
        return f"dense_resource<{print_key(key)}>"

    def attr_dict(self, d, skip=()) -> str:
        items = [(k, v) for k, v in d.items() if v is not None and k not in skip]
        if not items:
            return "{}"
        return "{" + ", ".join([print_key(k) if v is UNIT else f"{print_key(k)} = {self.attr(v)}"
                                for k, v in items]) + "}"

    def opt_attr_dict(self, d, skip=()):
        """Write `` {a = 1}`` unless nothing is left to print."""
        s = self.attr_dict(d, skip)
        if s != "{}":
            self.write(" " + s)

    # -- ops -------------------------------------------------------------------

    def print_op(self, op: Operation):
        if op.results:
            self.write(", ".join([self.define(r) for r in op.results]))
            self.write(" = ")
        if self.generic or not hasattr(op, "print_custom"):
            self.print_generic(op)
        else:
            op.print_custom(self)
        if self.debuginfo:
            self.write(f" loc({op.loc.text()})")

    def print_generic(self, op: Operation):
        w = self.out.append
        w('"' + op.name + '"(')
        w(self.values(op.operands))
        w(")")
        if op.regions:
            w(" (")
            isolated = ISOLATED_FROM_ABOVE in op.traits
            for i, r in enumerate(op.regions):
                if i:
                    w(", ")
                self.print_region(r, entry_args=True, isolated=isolated)
            w(")")
        self.opt_attr_dict(op.attributes)
        w(" : (")
        w(", ".join([v.type._text for v in op.operands]))
        w(") -> ")
        rs = op.results
        if len(rs) == 1 and not rs[0].type._text.startswith("("):
            w(rs[0].type._text)
        else:
            w("(" + ", ".join([r.type._text for r in rs]) + ")")

    def print_region(self, region: Region, entry_args=False, isolated=False):
        """``{ ops }``.  With `entry_args` the entry block prints its label and
        arguments; custom forms that show them in a header pass False."""
        w = self.out.append
        self.push_scope(isolated)
        w("{")
        outer = self.indent
        self.indent = outer + "  "
        for bi, b in enumerate(region.blocks):
            if bi > 0 or (entry_args and b.args) or len(region.blocks) > 1:
                w("\n" + outer)
                w(self.block_name(b))
                if b.args:
                    w("(" + ", ".join([f"{self.define(a)}: {a.type._text}" for a in b.args]) + ")")
                w(":")
            for op in b.ops:
                w("\n" + self.indent)
                self.print_op(op)
        self.indent = outer
        w("\n" + outer + "}")
        self.pop_scope()

    def block_name(self, b) -> str:
        name = self.block_names.get(b)
        if name is None:
            name = f"^bb{len(self.block_names)}"
            self.block_names[b] = name
        return name

    def define_block_args(self, block):
        return [self.define(a) for a in block.args]

    # -- modules -------------------------------------------------------------

    def print_toplevel(self, module: Operation, external=None) -> str:
        """A module prints as its ops when it carries nothing of its own."""
        if module.name == "builtin.module" and not module.attributes and not self.generic:
            first = True
            for op in module.body.ops:
                if not first:
                    self.write("\n")
                first = False
                self.indent = ""
                self.print_op(op)
                self.write("\n")
        else:
            self.print_op(module)
            self.write("\n")
        self.print_resources(external)
        return self.text()

    def print_resources(self, external=None):
        if not self.resources and not external:
            return
        w = self.out.append
        w("\n{-#\n")
        if self.resources:
            self._print_blobs()
            w(",\n" if external else "\n")
        if external:
            from .attributes import quote
            w("  external_resources: {\n")
            for si, (section, entries) in enumerate(external.items()):
                w(f"    {section}: {{\n")
                for i, (k, v) in enumerate(entries.items()):
                    w(f"      {k}: {quote(v)}" + (",\n" if i + 1 < len(entries) else "\n"))
                w("    }" + (",\n" if si + 1 < len(external) else "\n"))
            w("  }\n")
        w("#-}\n")

    def _print_blobs(self):
        w = self.out.append
        w("  dialect_resources: {\n    builtin: {\n")
        items = list(self.resources.items())
        for i, (key, a) in enumerate(items):
            data = a.array
            if not data.flags.c_contiguous:
                import numpy as np
                data = np.ascontiguousarray(data)
            if data.dtype.byteorder == ">":
                data = data.astype(data.dtype.newbyteorder("<"))
            align = max(data.dtype.itemsize, 1)
            w(f'      {print_key(key)}: "0x{align.to_bytes(4, "little").hex().upper()}{data.tobytes().hex().upper()}"')
            w(",\n" if i + 1 < len(items) else "\n")
        w("    }\n  }")


def print_module(module: Operation, generic=False, debuginfo=False, external=None) -> str:
    return Printer(generic=generic, debuginfo=debuginfo).print_toplevel(module, external)


def print_op(op: Operation, generic=False) -> str:
    """One op as text (with nested regions); names are local to this print."""
    p = Printer(generic=generic)
    p.print_op(op)
    return p.text()


def print_symbol(name: str) -> str:
    return "@" + print_symbol_name(name)


__all__ = ["Printer", "print_module", "print_op", "BlockArgument"]
