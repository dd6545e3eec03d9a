"""The panel's settings as command-line flags, generated from ``FOOT_LOCK_PG_settings``.

Each annotation of the PropertyGroup is a deferred bpy property whose ``keywords`` hold
its default, limits and description. The flags are made from those (``speed_threshold``
becomes ``--speed-threshold``), so a flag's name and default cannot drift from the panel.
A setting gets a flag when the job uses it: the solver's settings (whatever
``solver_settings()`` reads) and the bake's own (:data:`BAKE_SETTINGS`). The preview's
settings, which only act while the timeline plays, get none.

That needs bpy (the PropertyGroup is built from ``bpy.props``). Without it there are no
settings flags, only BVH files can be fixed, and the solver runs with its own defaults,
which are the panel's defaults too (the PropertyGroup takes them from the solver).

A flag the user does not give leaves the setting alone: a ``.blend`` keeps the values
stored on its armatures, every other input gets the panel's defaults.
"""

import argparse
import dataclasses
import importlib.util
from dataclasses import dataclass

from .stops import import_blender

# What the job reads itself: whether stored contact curves are replaced, where the bake goes.
BAKE_SETTINGS = {"overwrite_contacts", "in_place"}

# Blender's unit of a property, as the metavar that tells the user what to type.
_METAVARS = {"VELOCITY": "M/S", "LENGTH": "M", "TIME_ABSOLUTE": "SECONDS"}


@dataclass(frozen=True)
class Setting:
    name: str
    kind: type  # bool, float or int
    default: object
    minimum: float | None
    maximum: float | None
    description: str
    unit: str

    @property
    def flag(self):
        return "--" + self.name.replace("_", "-")


def bpy_available():
    return importlib.util.find_spec("bpy") is not None


def panel_settings():
    """The panel's settings that the job uses, in the panel's order; () without bpy."""
    if not bpy_available():
        return ()
    bpy = import_blender()

    from ..adapters.properties import SCENE_UNITS, FOOT_LOCK_PG_settings, solver_settings

    kinds = {bpy.props.BoolProperty: bool, bpy.props.FloatProperty: float, bpy.props.IntProperty: int}
    annotations = FOOT_LOCK_PG_settings.__annotations__
    used = names_read_by(solver_settings, annotations) | BAKE_SETTINGS
    settings = []
    for name, prop in annotations.items():
        if name not in used:
            continue
        if prop.function not in kinds:
            raise TypeError(f"setting {name!r} is a {prop.function.__name__}: give it a command-line flag type")
        kind, keywords = kinds[prop.function], prop.keywords
        settings.append(Setting(
            name, kind, keywords.get("default", kind()), keywords.get("min"), keywords.get("max"),
            keywords.get("description", ""), SCENE_UNITS.get(name) or keywords.get("unit") or keywords.get("subtype", ""),
        ))
    return tuple(settings)


def names_read_by(function, annotations):
    """The settings ``function`` reads, recorded by calling it on a stand-in for the panel's."""
    read = set()

    class StandIn:
        def __getattr__(self, name):
            read.add(name)
            return annotations[name].keywords.get("default")

    function(StandIn())
    return read


def add_flags(parser, settings):
    group = parser.add_argument_group(
        "detection and solver settings",
        "The sidebar panel's settings, with the same names and defaults. Thresholds are for an "
        "adult and scale with the character's leg length.",
    )
    for setting in settings:
        # SUPPRESS: a flag that is not given stays out of the namespace (see resolve()).
        if setting.kind is bool:
            group.add_argument(
                setting.flag, dest=setting.name, action=argparse.BooleanOptionalAction,
                default=argparse.SUPPRESS, help=_help(setting, "on" if setting.default else "off"),
            )
        else:
            group.add_argument(
                setting.flag, dest=setting.name, type=_bounded(setting), default=argparse.SUPPRESS,
                metavar=_METAVARS.get(setting.unit, setting.kind.__name__.upper()),
                help=_help(setting, f"{setting.default:g}"),
            )


def _help(setting, default):
    return f"{setting.description} (default: {default})".replace("%", "%%")


def _bounded(setting):
    """An argparse type that refuses values outside the property's hard limits."""

    def parse(text):
        value = setting.kind(text)
        low = setting.minimum if setting.minimum is not None else -float("inf")
        high = setting.maximum if setting.maximum is not None else float("inf")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value:g} is outside {low:g} .. {high:g}")
        return value

    parse.__name__ = setting.kind.__name__  # argparse names the type in its error message
    return parse


def resolve(args, settings):
    """Fill in the defaults of the flags not given; remember which were given."""
    args.explicit_settings = [s.name for s in settings if hasattr(args, s.name)]
    for setting in settings:
        if not hasattr(args, setting.name):
            setattr(args, setting.name, setting.default)
    return args


def apply_to(properties, args):
    """Set the given flags on an object's ``foot_lock`` settings."""
    for name in args.explicit_settings:
        setattr(properties, name, getattr(args, name))


def settings_argv(args, settings):
    """The given flags as command-line arguments again (for a worker process)."""
    argv = []
    for setting in settings:
        if setting.name not in args.explicit_settings:
            continue
        value = getattr(args, setting.name)
        if setting.kind is bool:
            argv.append(setting.flag if value else "--no-" + setting.flag[2:])
        else:
            argv += [setting.flag, repr(value)]
    return argv


def settings_used(args):
    """The settings a run used, for the report: the panel's names and values, or without bpy
    (no settings flags) the solver core's own defaults, as it names them."""
    settings = panel_settings()
    if settings:
        return {setting.name: getattr(args, setting.name) for setting in settings}
    return dataclasses.asdict(solver_settings_of(args))


def solver_settings_of(args):
    """The solver core's settings from the flags (the solver's defaults without bpy)."""
    if not bpy_available():
        from ..solvers.foot_lock import FootLockSettings

        return FootLockSettings()
    from ..adapters.properties import solver_settings

    return solver_settings(args)
