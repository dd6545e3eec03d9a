"""Foot Lock's settings, stored on each armature object as ``Object.foot_lock``.

Thresholds are given for a reference adult (metres, seconds) and scaled by the
character's own leg length, so the defaults suit a character in any unit. The panel
shows the lengths and speeds among them in the scene's units (:data:`SCENE_UNITS`).
"""

import math

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    FloatProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)
from bpy.types import PropertyGroup

from ..solvers.contacts import ContactSettings
from ..solvers.foot_lock import FootLockSettings
from ..solvers.leg_ik import LegOptions
from ..solvers.runtime_lock import RuntimeSettings
from ..solvers.runtime_pose import PELVIS_DROP_SMOOTHING

_CONTACT_DEFAULTS = ContactSettings()
_SOLVER_DEFAULTS = FootLockSettings()
_RUNTIME_DEFAULTS = RuntimeSettings()

# Settings stored in metres (per second) for an adult that the panel shows, and takes
# typed, in the scene's units: setting -> Blender's unit.
SCENE_UNITS = {
    "speed_threshold": "VELOCITY",
    "height_threshold": "LENGTH",
    "max_correction": "LENGTH",
    "lock_distance": "LENGTH",
    "unlock_distance": "LENGTH",
}


# Studios animate linked characters through library overrides: a setting that is not
# overridable cannot be changed there (the legs cannot even be added) and resets on reload.
OVERRIDABLE = "LIBRARY_OVERRIDABLE"


def overridable(cls):
    """Every property declared on ``cls`` editable on a library override (collections take
    new items there too)."""
    for deferred in cls.__annotations__.values():
        extra = {"USE_INSERTION"} if deferred.function is CollectionProperty else set()
        deferred.keywords.setdefault("override", {OVERRIDABLE} | extra)
    return cls


@overridable
class FOOT_LOCK_PG_leg(PropertyGroup):
    """One leg's bones; ``name`` is the leg's side ("left", "front_right", ...)."""

    thigh: StringProperty(name="Thigh", description="Upper leg bone: its head is the hip joint")
    shin: StringProperty(name="Shin", description="Lower leg bone: its head is the knee")
    foot: StringProperty(name="Foot", description="Foot bone: its head is the ankle")
    toe: StringProperty(
        name="Toe",
        description="Toe bone: its head (the ball of the foot) is what gets locked. "
        "Leave empty on rigs without toes: the foot's tail is locked instead",
    )
    ik_control: StringProperty(
        name="IK Control",
        description="Control rigs: the foot IK control that moves this leg (the fix is keyed on it, "
        "and its foot_contact curve is obeyed). Leave empty where the leg bones are keyed directly; "
        "Rigify's controls are found without it",
    )


@overridable
class FOOT_LOCK_PG_report(PropertyGroup):
    """What the last Remove Foot Sliding did, shown in the panel."""

    valid: BoolProperty(name="Has Report", default=False)
    action: StringProperty(name="Action", description="Action the result was baked to")
    frames: IntProperty(name="Frames", description="Frames solved")
    contact_frames: IntProperty(name="Contact Frames", description="Leg-frames locked to the ground, by the heel or the toe")
    slide_before: FloatProperty(name="Slide Before", description="Mean toe slide during contact, cm/s")
    slide_after: FloatProperty(name="Slide After", description="Mean toe slide during contact, cm/s")
    skate_before: FloatProperty(name="Skate Before", subtype="FACTOR", description="Share of frames skating")
    skate_after: FloatProperty(name="Skate After", subtype="FACTOR", description="Share of frames skating")
    pelvis_shift: FloatProperty(name="Pelvis Shift", description="Mean pelvis change, cm")
    ground_slide_before: FloatProperty(
        name="Ground Slide Before",
        description="Mean horizontal speed of each foot's lowest point while it is on its local ground "
        "(not the locked frames: a check the solve did not choose), cm/s",
    )
    ground_slide_after: FloatProperty(
        name="Ground Slide After",
        description="Mean horizontal speed of each foot's lowest point while it is on its local ground, cm/s",
    )
    seconds: FloatProperty(name="Time", unit="TIME_ABSOLUTE", description="Time the bake took")
    source: StringProperty(name="Read From", description="Where the motion was read: the keys, the evaluated scene or the NLA")
    controls: StringProperty(name="Controls", description="Control rig the fix was keyed on (empty: the leg bones)")
    control_residual: FloatProperty(
        name="Control Residual", description="Mean distance of the deform toes from the fix, with the keyed controls, mm"
    )
    warnings: StringProperty(name="Warnings", description="What the bake warned of, one warning a line")
    contacts_obeyed: StringProperty(
        name="Contacts Obeyed",
        description="Contact curves an animator keyed or edited, locked as keyed (not labelled again)",
    )


def in_scene_units(name):
    """The panel's field of the setting ``name`` of :data:`SCENE_UNITS`."""
    return f"{name}_in_scene_units"


def unit_scale(scene):
    """Metres per Blender unit as Blender shows lengths: the Unit Scale, unless the scene
    has no unit system (then Blender shows the numbers as they are)."""
    return scene.unit_settings.scale_length if scene.unit_settings.system != "NONE" else 1.0


def _context_unit_scale():
    scene = bpy.context.scene  # the scene whose units the panel shows
    return unit_scale(scene) if scene is not None else 1.0


def _scene_units_field(name, unit, stored):
    """A field that shows and sets the setting ``name`` (metres for an adult; ``stored`` its
    property's keywords) in the scene's units.

    Blender shows a LENGTH or VELOCITY value times the scene's Unit Scale and divides a
    typed length by it: shown as it is, a 0.1 m threshold would read "1 mm" in a
    centimetre scene (Unit Scale 0.01) and a typed "10 cm" would store 10 m."""

    def shown(self):
        return getattr(self, name) / _context_unit_scale()

    def typed(self, value):
        setattr(self, name, value * _context_unit_scale())

    return FloatProperty(name=stored["name"], description=stored["description"], unit=unit, min=0.0,
                         get=shown, set=typed, options=set(), override={OVERRIDABLE})


@overridable
class FOOT_LOCK_PG_settings(PropertyGroup):
    pelvis: StringProperty(name="Pelvis", description="Bone carrying the body's translation (hips)")
    legs: CollectionProperty(type=FOOT_LOCK_PG_leg, name="Legs")
    active_leg: IntProperty(name="Active Leg", min=0)
    body_control: StringProperty(
        name="Body Control",
        description="Control rigs: the control that carries the hips and body (Rigify: torso); the fix's "
        "pelvis shift is keyed on it",
    )

    # Contact labelling
    speed_threshold: FloatProperty(
        name="Contact Speed",
        description="A toe slower than this is in contact (for an adult; scaled by leg length)",
        default=_CONTACT_DEFAULTS.speed_threshold, min=0.01, soft_max=1.0,
    )
    height_threshold: FloatProperty(
        name="Contact Height",
        description="A toe higher than this above its local ground is not in contact "
        "(for an adult; scaled by leg length)",
        default=_CONTACT_DEFAULTS.height_threshold, min=0.0, soft_max=0.5,
    )
    vote_window: FloatProperty(
        name="Vote Window",
        description="Majority vote over this long (in whole frames: none at 30 fps and below) removes "
        "single-frame flicker",
        default=_CONTACT_DEFAULTS.vote_window, min=0.0, soft_max=0.2, unit="TIME_ABSOLUTE",
    )
    min_gap: FloatProperty(
        name="Fill Gaps",
        description="Breaks in a contact shorter than this are closed",
        default=_CONTACT_DEFAULTS.min_gap, min=0.0, soft_max=0.3, unit="TIME_ABSOLUTE",
    )
    smoothing: FloatProperty(
        name="Smoothing",
        description="Ease contacts in and out over this long (0: on/off curves)",
        default=_CONTACT_DEFAULTS.smoothing, min=0.0, soft_max=0.5, unit="TIME_ABSOLUTE",
    )
    compensate_slip: BoolProperty(
        name="Compensate Root Slip",
        description="Find contacts even where the root moves faster or slower than the feet "
        "(the usual cause of sliding)",
        default=_CONTACT_DEFAULTS.compensate_slip,
    )
    overwrite_contacts: BoolProperty(
        name="Overwrite Contacts",
        description="Replace existing contact curves (by default, curves you keyed or edited are kept)",
        default=False,
    )

    # Solver
    softening: FloatProperty(
        name="Soft Reach",
        description="How far past its longest extension in the clip a leg may stretch, eased in, "
        "as a share of its length",
        default=_SOLVER_DEFAULTS.softening_ratio, min=0.0, max=0.2, subtype="FACTOR",
    )
    height_clamp: BoolProperty(name="Ground Clamp", description="Keep toe, heel and toe tip above the ground", default=True)
    heel_look_at: BoolProperty(name="Aim Foot", description="Turn the foot so the toe reaches its target", default=True)
    toe_look_at: BoolProperty(name="Aim Toe", description="Turn the toe to keep its tip above the ground", default=True)

    # Bake
    in_place: BoolProperty(
        name="In Place",
        description="Write into the current action instead of a new '<action>.footlock' action",
        default=False,
    )

    report: PointerProperty(type=FOOT_LOCK_PG_report)

    # Preview: the runtime foot lock on the scene's terrain, live (the ``preview`` switch
    # itself is added by the preview module, adapters/preview.py).
    preview_error: StringProperty(name="Preview Error", description="Why Preview was last turned off")
    ground_collection: PointerProperty(
        type=bpy.types.Collection, name="Ground",
        description="Only this collection's meshes are ground (empty: every visible mesh in the scene "
        "but the character's own)",
    )
    root_follow: BoolProperty(
        name="Follow Terrain",
        description="Raise and lower the whole character with the ground under it, eased, on top of the "
        "clip's own root motion (a walk climbs stairs and ramps)",
        default=True,
    )
    max_correction: FloatProperty(
        name="Max Correction",
        description="Ground further than this below the body's ground, or above it and above the highest "
        "planted foot, is a ledge or a bad hit and is ignored (for an adult; scaled by leg length)",
        default=_RUNTIME_DEFAULTS.max_correction, min=0.0, soft_max=2.0,
    )
    lock_distance: FloatProperty(
        name="Lock Distance",
        description="A planted foot locks only this close to its animated position "
        "(for an adult; scaled by leg length)",
        default=_RUNTIME_DEFAULTS.lock_distance, min=0.0, soft_max=0.5,
    )
    unlock_distance: FloatProperty(
        name="Unlock Distance",
        description="A locked foot lets go when it lags this far behind its animated position "
        "and its leg can no longer reach it (for an adult; scaled by leg length)",
        default=_RUNTIME_DEFAULTS.unlock_distance, min=0.0, soft_max=1.0,
    )
    blend_time: FloatProperty(
        name="Blend Time",
        description="Every lock and release eases in over this long",
        default=_RUNTIME_DEFAULTS.blend_time, min=0.0, soft_max=0.5, unit="TIME_ABSOLUTE",
    )
    max_tilt: FloatProperty(
        name="Max Tilt",
        description="A foot turns at most this far toward the ground's slope",
        default=_RUNTIME_DEFAULTS.max_tilt, min=0.0, max=math.pi / 2, subtype="ANGLE",
    )
    pelvis_smoothing: FloatProperty(
        name="Pelvis Smoothing",
        description="The pelvis lowers as fast as a planted foot needs to reach the ground, and comes "
        "back eased with this time constant, its speed never jumping (most of the way in four times this)",
        default=_RUNTIME_DEFAULTS.pelvis_return_smoothing, min=0.0, soft_max=0.5, unit="TIME_ABSOLUTE",
    )
    show_overlay: BoolProperty(
        name="Overlay",
        description="Draw the locked contact points and the toe paths before and after locking "
        "in the 3D View while Preview is on",
        default=True,
    )


# Plain functions, not PropertyGroup methods: Blender 4.2 crashes at exit when a
# registered PropertyGroup class carries Python methods.
def contact_settings(settings):
    """The solver core's contact settings from an object's ``foot_lock`` settings."""
    return ContactSettings(
        speed_threshold=settings.speed_threshold,
        height_threshold=settings.height_threshold,
        vote_window=settings.vote_window,
        min_gap=settings.min_gap,
        smoothing=settings.smoothing,
        compensate_slip=settings.compensate_slip,
    )


def runtime_settings(settings):
    """The runtime lock's settings from an object's ``foot_lock`` settings."""
    return RuntimeSettings(
        lock_distance=settings.lock_distance,
        unlock_distance=settings.unlock_distance,
        blend_time=settings.blend_time,
        max_correction=settings.max_correction,
        max_tilt=settings.max_tilt,
        pelvis_drop_smoothing=PELVIS_DROP_SMOOTHING,
        pelvis_return_smoothing=settings.pelvis_smoothing,
    )


def solver_settings(settings):
    """The solver core's settings from an object's ``foot_lock`` settings."""
    return FootLockSettings(
        contacts=contact_settings(settings),
        softening_ratio=settings.softening,
        leg_options=LegOptions(
            height_clamp=settings.height_clamp,
            heel_look_at=settings.heel_look_at,
            toe_look_at=settings.toe_look_at,
        ),
    )


classes = (FOOT_LOCK_PG_leg, FOOT_LOCK_PG_report, FOOT_LOCK_PG_settings)


def register_properties():
    # The fields in the scene's units are added to the registered class, not declared in
    # its body: a property with Python callbacks declared there crashes Blender 4.2 at exit.
    stored = FOOT_LOCK_PG_settings.__annotations__
    for name, unit in SCENE_UNITS.items():
        setattr(FOOT_LOCK_PG_settings, in_scene_units(name), _scene_units_field(name, unit, stored[name].keywords))
    bpy.types.Object.foot_lock = PointerProperty(type=FOOT_LOCK_PG_settings, name="Foot Lock", override={OVERRIDABLE})


def unregister_properties():
    del bpy.types.Object.foot_lock
    for name in SCENE_UNITS:
        delattr(FOOT_LOCK_PG_settings, in_scene_units(name))
