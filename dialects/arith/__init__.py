"""arith: scalar and vector arithmetic used inside te and tir bodies."""

from . import ops  # noqa: F401
