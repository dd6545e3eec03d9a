"""The axes an FBX file declares, read as Blender's own importer reads them, so an FBX
written back declares the same: a Z-up file (3ds Max, Unreal) stays Z-up, a Y-up one Y-up.
Blender's importer turns either into its own Z-up world and keeps no note of which it was;
its exporter writes Y-up unless told otherwise."""

from io_scene_fbx.fbx_utils import RIGHT_HAND_AXES
from io_scene_fbx.import_fbx import elem_find_first, elem_props_get_integer
from io_scene_fbx.parse_fbx import parse

# GlobalSettings' axis properties and the importer's defaults for a file without them.
_AXIS_PROPERTIES = ((b"UpAxis", 2), (b"UpAxisSign", 1), (b"FrontAxis", 1), (b"FrontAxisSign", 1),
                    (b"CoordAxis", 0), (b"CoordAxisSign", 1))


def fbx_axes(path):
    """``{"axis_up": ..., "axis_forward": ...}`` for Blender's FBX exporter as ``path``
    declares them, or {} where the file does not say (the exporter's defaults then)."""
    try:
        root, _ = parse(str(path))
    except Exception:  # any file the importer took but this parse does not: the exporter's defaults
        return {}
    settings = elem_find_first(root, b"GlobalSettings")
    props = elem_find_first(settings, b"Properties70") if settings is not None else None
    if props is None:
        return {}
    up, up_sign, front, front_sign, coord, coord_sign = (elem_props_get_integer(props, name, default)
                                                         for name, default in _AXIS_PROPERTIES)
    declared = ((up, up_sign), (front, front_sign), (coord, coord_sign))
    axes = next((pair for pair, values in RIGHT_HAND_AXES.items() if values == declared), None)
    return {} if axes is None else {"axis_up": axes[0], "axis_forward": axes[1]}
