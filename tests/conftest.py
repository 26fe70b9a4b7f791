"""Shared pytest setup: hypothesis profiles.

`--hypothesis-profile=thorough` (or TVMD_FUZZ=1) runs the long fuzzing; the
default keeps CI under its time budget.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("thorough" if os.environ.get("TVMD_FUZZ") else "ci")
