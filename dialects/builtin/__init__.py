"""builtin: the module op that holds everything else."""

from . import ops  # noqa: F401  (registers the ops)
