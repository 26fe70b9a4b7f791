"""te: tensor expressions (TVM's te.compute) and their schedules."""

from . import ops, schedule_ops  # noqa: F401
