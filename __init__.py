"""Foot Lock: remove foot sliding from character animation.

Layout:

- ``solvers/``: numpy only, so it imports and tests without Blender: contact labels,
  the offline foot lock and leg IK, leg detection, BVH reading and writing, the runtime
  (preview) lock, metrics.
- ``adapters/``: the only code that talks to bpy: F-curve storage across Blender versions
  (``action_compat``), armatures and actions to arrays and back (``armature``), what the
  buttons and the command line do (``jobs``), the PropertyGroups (``properties``), and the
  preview's frame handler, terrain raycasts and overlay (``preview``, ``terrain``,
  ``overlay``).
- ``operators/`` and ``ui/``: what the user clicks (one operator per module; the panels).
- ``cli/``: ``python -m foot_lock`` and ``blender -b``: files and folders of clips in and
  out (BVH through the solvers alone, everything else through Blender).

This module only delegates registration. The Blender-facing subpackages are imported
inside ``register()`` / ``unregister()`` so that ``import foot_lock`` (and with it
``foot_lock.solvers``) never needs bpy.
"""


def _subpackages():
    """The Blender-facing subpackages in registration order."""
    from . import adapters, operators, ui

    # Adapters first: operators and panels use the PropertyGroups it registers.
    return (adapters, operators, ui)


def register():
    for module in _subpackages():
        module.register()


def unregister():
    for module in reversed(_subpackages()):
        module.unregister()
