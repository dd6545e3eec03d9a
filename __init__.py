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

import atexit


def _subpackages():
    """The Blender-facing subpackages in registration order."""
    from . import adapters, operators, ui

    # Adapters first: operators and panels use the PropertyGroups it registers.
    return (adapters, operators, ui)


def register():
    import bpy

    for module in _subpackages():
        module.register()
    if _blender_is_a_python_module(bpy):
        atexit.register(_unregister_at_exit)


def unregister():
    atexit.unregister(_unregister_at_exit)
    for module in reversed(_subpackages()):
        module.unregister()


def _blender_is_a_python_module(bpy):
    """The ``bpy`` wheel rather than Blender itself (``bpy.app.module`` from 4.3 on; 4.2's
    wheel has no executable)."""
    return getattr(bpy.app, "module", not bpy.app.binary_path)


def _unregister_at_exit():
    """Unregister what a script registered and never unregistered (users' scripts do that).

    The bpy wheel closes Blender from its own exit handler, and with our classes still
    registered it hangs there (4.5) or crashes (4.2). Exit handlers run last registered
    first, so this one runs before Blender's. An add-on enabled in the preferences is left
    to Blender, which disables those before it closes."""
    import bpy

    if __name__ not in bpy.context.preferences.addons:
        unregister()
