"""Relay operators, one module per family; importing this registers them all."""

from . import base, function, elemwise, nn, transform  # noqa: F401
from .base import OpPattern, RelayOp  # noqa: F401
