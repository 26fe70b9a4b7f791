"""tir: loops over buffers, down to what code generation needs."""

from . import ops  # noqa: F401
