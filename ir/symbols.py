"""Symbol tables: ops with a ``sym_name`` inside an op with the SymbolTable trait."""

from __future__ import annotations

from .traits import SYMBOL_TABLE

# While the verifier runs, tables are built once per symbol-table op.
_cache: dict | None = None


def nearest_symbol_table(op):
    p = op.parent_op
    while p is not None and SYMBOL_TABLE not in p.traits:
        p = p.parent_op
    return p


def build_table(table_op) -> dict:
    out = {}
    for r in table_op.regions:
        for b in r.blocks:
            for op in b.ops:
                name = op.attributes.get("sym_name")
                if isinstance(name, str):
                    out[name] = op
    return out


def table_of(table_op) -> dict:
    if _cache is not None:
        t = _cache.get(id(table_op))
        if t is None:
            t = _cache[id(table_op)] = build_table(table_op)
        return t
    return build_table(table_op)


def lookup_symbol(from_op, name: str):
    """The op named `name` in the symbol tables enclosing `from_op`."""
    table_op = nearest_symbol_table(from_op)
    while table_op is not None:
        op = table_of(table_op).get(name)
        if op is not None:
            return op
        table_op = nearest_symbol_table(table_op)
    return None


class caching:
    """Within this context, symbol lookups reuse one table per module."""

    def __enter__(self):
        global _cache
        self._prev = _cache
        _cache = {}

    def __exit__(self, *exc):
        global _cache
        _cache = self._prev
        return False


def unique_name(taken, base: str) -> str:
    if base not in taken:
        return base
    n = 1
    while f"{base}_{n}" in taken:
        n += 1
    return f"{base}_{n}"
