"""``relay.analysis``: what a script asks of an expression."""

from .expr import free_vars

__all__ = ["free_vars"]
