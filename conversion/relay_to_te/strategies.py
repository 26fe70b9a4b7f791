"""The complete table of TE computes: ``STRATEGIES[op_name](e, op, args) -> tensor``.

Importing this module loads every compute module (``topi_*.py``) through
:func:`registry.computes`; ``STRATEGIES`` is the registry's table itself
(one dict, so a test that removes an entry removes it for the lowering
too).  Compute modules never import this module: they register through
``registry.strategy`` and share the helpers in ``registry.py``.
"""

from __future__ import annotations

from .registry import Scalar, computes, lookup  # noqa: F401  (re-exported)

STRATEGIES = computes()
