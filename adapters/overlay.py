"""Viewport feedback while Preview is on: where the toes are locked, and the toe paths
before locking (the animated toes on the terrain) and after (what is displayed).

:func:`overlay_geometry` builds the line coordinates in numpy, so it can be tested in
background mode, where drawing never runs; :func:`draw` is the ``SpaceView3D``
POST_VIEW callback that hands them to the GPU. Everything is drawn as polylines, whose
built-in shader has the same name on Blender 4.2 and 5.0.
"""

from dataclasses import dataclass

import gpu
import numpy as np
from gpu_extras.batch import batch_for_shader

LINE_WIDTH = 2.0
COLORS = (
    ("before", (0.7, 0.7, 0.7, 0.6)),
    ("after", (0.2, 0.8, 1.0, 1.0)),
    ("markers", (1.0, 0.4, 0.1, 1.0)),
)
_AXES = np.eye(3)


@dataclass
class OverlayGeometry:
    """Ends of line segments (2 * segments, 3) in world space, ready for a LINES batch."""

    contacts: np.ndarray  # (K, 3) points the locked toes are pinned to
    markers: np.ndarray  # a small cross on each contact point
    before: np.ndarray  # toe paths before locking
    after: np.ndarray  # toe paths as displayed


def overlay_geometry(toe_inputs, toes, contacts, marker_size):
    """Geometry of one character: ``toe_inputs`` and ``toes`` (T, L, 3) are the last T
    frames' toes before and after locking, oldest first; ``contacts`` (K, 3)."""
    contacts = np.asarray(contacts, dtype=float).reshape(-1, 3)
    arms = marker_size * np.stack((-_AXES, _AXES), axis=1)  # (3 axes, 2 ends, 3)
    markers = (contacts[:, None, None] + arms[None]).reshape(-1, 3)
    return OverlayGeometry(contacts, markers, _segments(toe_inputs), _segments(toes))


def _segments(paths):
    """Consecutive points of each path (T, L, 3) as segment ends (2 (T - 1) L, 3)."""
    paths = np.asarray(paths, dtype=float)
    return np.stack((paths[:-1], paths[1:]), axis=2).reshape(-1, 3)


def draw(geometries):
    """Draw ``geometries()`` (a list of :class:`OverlayGeometry`) over the 3D View."""
    shader = gpu.shader.from_builtin("POLYLINE_UNIFORM_COLOR")
    shader.uniform_float("viewportSize", gpu.state.viewport_get()[2:])
    shader.uniform_float("lineWidth", LINE_WIDTH)
    gpu.state.blend_set("ALPHA")
    for geometry in geometries():
        for name, color in COLORS:
            coords = getattr(geometry, name)
            if len(coords):
                shader.uniform_float("color", color)
                batch_for_shader(shader, "LINES", {"pos": coords.astype(np.float32)}).draw(shader)
    gpu.state.blend_set("NONE")
