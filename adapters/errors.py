"""The adapter layer's one exception type, and every failure the jobs expect.

This module itself uses no bpy, but it lives in ``adapters``, whose ``__init__`` imports
bpy: code that must run without Blender catches the solvers' own errors instead.
"""

from ..solvers.kinematics import SolverInputError
from ..solvers.leg_detection import LegDetectionError


class AdapterError(Exception):
    """The scene cannot be turned into arrays (or back): the message says what and where."""


# Every failure the jobs expect (their message says it all); anything else is a bug and should surface as one.
EXPECTED_ERRORS = (AdapterError, SolverInputError, LegDetectionError)
