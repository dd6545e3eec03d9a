"""Foot Lock: remove foot sliding from character animation.

Layout:

- ``solvers/``: contact detection and foot locking on numpy arrays; no bpy, so it
  imports and tests without Blender.
- ``adapters/``: the only layer that turns armatures and actions into arrays and back;
  it also owns the add-on's PropertyGroups.
- ``operators/`` and ``ui/``: what the user clicks.

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
