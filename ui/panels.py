"""The "Foot Lock" tab of the 3D View sidebar (N-panel)."""

import textwrap

import bpy

from ..adapters.properties import SCENE_UNITS, in_scene_units


class FootLockPanel:
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Foot Lock"

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and obj.type == "ARMATURE"


def draw_settings(layout, settings, names):
    """The settings ``names``, lengths and speeds in the scene's units."""
    for name in names:
        layout.prop(settings, in_scene_units(name) if name in SCENE_UNITS else name)


class FOOT_LOCK_PT_main(FootLockPanel, bpy.types.Panel):
    bl_label = "Foot Lock"

    def draw(self, context):
        layout = self.layout
        settings = context.active_object.foot_lock
        column = layout.column()
        column.scale_y = 1.5
        column.operator("foot_lock.remove_sliding", icon="CON_FLOOR")
        layout.operator("foot_lock.root_motion_from_feet", icon="TRACKING_FORWARDS")
        layout.prop(settings, "in_place")
        draw_report(layout, settings.report, context.region.width / context.preferences.system.ui_scale)


def draw_report(layout, report, width):
    """The last bake's figures, and its warnings wrapped to the sidebar's ``width`` (pixels
    at UI scale 1)."""
    if not report.valid:
        return
    box = layout.box()
    box.label(text=f"Last bake: {report.frames} frames -> {report.action}", icon="INFO")
    grid = box.grid_flow(columns=3, even_columns=True, align=True)
    for label, before, after in (
        ("Slide cm/s", f"{report.slide_before:.1f}", f"{report.slide_after:.2f}"),
        ("On ground cm/s", f"{report.ground_slide_before:.1f}", f"{report.ground_slide_after:.1f}"),
        ("Skating", f"{100 * report.skate_before:.1f}%", f"{100 * report.skate_after:.1f}%"),
    ):
        grid.label(text=label)
        grid.label(text=before)
        grid.label(text=after)
    box.label(text=f"Contact frames: {report.contact_frames}   Pelvis shift: {report.pelvis_shift:.1f} cm")
    if report.controls:
        box.label(text=f"Keyed on the {report.controls} controls: residual {report.control_residual:.2f} mm")
    if report.contacts_obeyed:
        box.label(text=f"Your contact keys obeyed: {report.contacts_obeyed}", icon="KEYFRAME_HLT")
    box.label(text=f"Took {report.seconds:.2f} s, motion read from the {report.source}")
    for warning in filter(None, report.warnings.split("\n")):
        column = box.column(align=True)
        for number, line in enumerate(wrapped(warning, width)):
            column.label(text=line, icon="ERROR" if number == 0 else "BLANK1")


# Pixels a character of the sidebar's labels takes, about (at UI scale 1).
_CHARACTER_WIDTH = 7


def wrapped(text, width):
    """``text`` in lines that fit ``width`` pixels (at UI scale 1) of the sidebar: a label
    does not wrap itself, and a warning runs to a few sentences."""
    return textwrap.wrap(text, max(20, int(width / _CHARACTER_WIDTH) - 4))


class FOOT_LOCK_PT_legs(FootLockPanel, bpy.types.Panel):
    bl_label = "Legs"
    bl_parent_id = "FOOT_LOCK_PT_main"

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        settings = obj.foot_lock
        row = layout.row(align=True)
        row.operator("foot_lock.detect_legs", icon="BONE_DATA")
        row.operator("foot_lock.add_leg", text="", icon="ADD")
        layout.prop_search(settings, "pelvis", obj.data, "bones")
        layout.prop_search(settings, "body_control", obj.data, "bones")
        if not settings.legs:
            layout.label(text="No legs yet: Detect Legs, or Remove Foot Sliding finds them", icon="QUESTION")
        for index, leg in enumerate(settings.legs):
            box = layout.box()
            header = box.row()
            header.prop(leg, "name", text="", icon="MOD_ARMATURE")
            header.operator("foot_lock.remove_leg", text="", icon="X").index = index
            for role in ("thigh", "shin", "foot", "toe", "ik_control"):
                box.prop_search(leg, role, obj.data, "bones")


class FOOT_LOCK_PT_contacts(FootLockPanel, bpy.types.Panel):
    bl_label = "Contacts"
    bl_parent_id = "FOOT_LOCK_PT_main"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        settings = context.active_object.foot_lock
        layout.operator("foot_lock.detect_contacts", icon="KEYFRAME")
        layout.prop(settings, "overwrite_contacts")
        draw_settings(layout, settings,
                      ("speed_threshold", "height_threshold", "vote_window", "min_gap", "smoothing", "compensate_slip"))


class FOOT_LOCK_PT_solver(FootLockPanel, bpy.types.Panel):
    bl_label = "Solver"
    bl_parent_id = "FOOT_LOCK_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        settings = context.active_object.foot_lock
        draw_settings(layout, settings, ("softening", "height_clamp", "heel_look_at", "toe_look_at"))


class FOOT_LOCK_PT_preview(FootLockPanel, bpy.types.Panel):
    bl_label = "Preview on Terrain"
    bl_parent_id = "FOOT_LOCK_PT_main"

    def draw(self, context):
        layout = self.layout
        settings = context.active_object.foot_lock
        row = layout.row(align=True)
        row.scale_y = 1.5
        row.prop(settings, "preview", toggle=True, icon="PAUSE" if settings.preview else "PLAY")
        row.operator("foot_lock.bake_preview", icon="REC")
        if settings.preview_error:
            layout.label(text=f"Stopped: {settings.preview_error}", icon="ERROR")
        layout.use_property_split = True
        draw_settings(layout, settings, ("ground_collection", "root_follow", "show_overlay", "max_correction",
                                         "lock_distance", "unlock_distance", "blend_time", "max_tilt", "pelvis_smoothing"))


classes = (FOOT_LOCK_PT_main, FOOT_LOCK_PT_legs, FOOT_LOCK_PT_contacts, FOOT_LOCK_PT_solver, FOOT_LOCK_PT_preview)
