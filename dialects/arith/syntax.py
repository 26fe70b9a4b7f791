"""arith's syntax: every op has a declarative ``ASSEMBLY_FORMAT`` (ops.py),
from which parser/grammar.py makes the rules and callbacks; nothing is
written by hand here."""

from __future__ import annotations

from . import ops  # noqa: F401  (registers the op classes and their formats)

GRAMMAR = "arith.lark"
OP_RULES: list = []
