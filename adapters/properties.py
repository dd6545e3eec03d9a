"""Foot Lock's settings, stored on each armature object as ``Object.foot_lock``.

Thresholds are given for a reference adult (metres, seconds) and scaled by the
character's own leg length, so the defaults suit a character in any unit.
"""

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

_CONTACT_DEFAULTS = ContactSettings()
_SOLVER_DEFAULTS = FootLockSettings()


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


class FOOT_LOCK_PG_report(PropertyGroup):
    """What the last Remove Foot Sliding did, shown in the panel."""

    valid: BoolProperty(name="Has Report", default=False)
    action: StringProperty(name="Action", description="Action the result was baked to")
    frames: IntProperty(name="Frames", description="Frames solved")
    contact_frames: IntProperty(name="Contact Frames", description="Leg-frames locked to the ground")
    slide_before: FloatProperty(name="Slide Before", description="Mean toe slide during contact, cm/s")
    slide_after: FloatProperty(name="Slide After", description="Mean toe slide during contact, cm/s")
    skate_before: FloatProperty(name="Skate Before", subtype="FACTOR", description="Share of frames skating")
    skate_after: FloatProperty(name="Skate After", subtype="FACTOR", description="Share of frames skating")
    pelvis_shift: FloatProperty(name="Pelvis Shift", description="Mean pelvis change, cm")
    seconds: FloatProperty(name="Time", unit="TIME_ABSOLUTE", description="Time the bake took")


class FOOT_LOCK_PG_settings(PropertyGroup):
    pelvis: StringProperty(name="Pelvis", description="Bone carrying the body's translation (hips)")
    legs: CollectionProperty(type=FOOT_LOCK_PG_leg, name="Legs")
    active_leg: IntProperty(name="Active Leg", min=0)

    # Contact labelling
    speed_threshold: FloatProperty(
        name="Contact Speed",
        description="A toe slower than this is in contact (for an adult; scaled by leg length)",
        default=_CONTACT_DEFAULTS.speed_threshold, min=0.01, soft_max=1.0, unit="VELOCITY",
    )
    height_threshold: FloatProperty(
        name="Contact Height",
        description="A toe higher than this above its local ground is not in contact "
        "(for an adult; scaled by leg length)",
        default=_CONTACT_DEFAULTS.height_threshold, min=0.0, soft_max=0.5, unit="LENGTH",
    )
    vote_window: FloatProperty(
        name="Vote Window",
        description="Majority vote over this long removes single-frame flicker",
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


def solver_settings(settings):
    """The solver core's settings from an object's ``foot_lock`` settings."""
    return FootLockSettings(
        contacts=contact_settings(settings),
        softening_ratio=settings.softening,
        height_clamp=settings.height_clamp,
        heel_look_at=settings.heel_look_at,
        toe_look_at=settings.toe_look_at,
    )


classes = (FOOT_LOCK_PG_leg, FOOT_LOCK_PG_report, FOOT_LOCK_PG_settings)


def register_properties():
    bpy.types.Object.foot_lock = PointerProperty(type=FOOT_LOCK_PG_settings, name="Foot Lock")


def unregister_properties():
    del bpy.types.Object.foot_lock
