"""A walk cycle looped with Cycles modifiers, fixed in real Blender: it still loops, its
feet stay planted over four cycles and the pelvis correction does not drift."""

import re

import numpy as np
import pytest
from blender_scenes import import_clip
from clip_scenarios import CMU_TO_METRES, gait_cycle, reference_labels, scale_root_motion, walk_cycle
from foot_lock.solvers import bvh
from foot_lock.solvers.kinematics import forward_kinematics

pytestmark = pytest.mark.blender
CYCLES = 4


def write_cycle_bvh(clip, target, root_scale):
    """A BVH of one gait cycle of ``clip`` (its last frame the first plus the stride), the
    hips travelling ``root_scale`` times as far; returns the unscaled cycle's contacts."""
    parsed = bvh.read(clip)
    skeleton, motion = bvh.to_motion(parsed)
    rig = bvh.detect_rig(parsed)
    cycle = walk_cycle(motion)
    parsed.tokens = parsed.tokens[: cycle.frames]
    parsed.header = re.sub(r"Frames:\s*\d+", f"Frames: {cycle.frames}", parsed.header)
    sliding = scale_root_motion(skeleton, cycle, root_scale)
    bvh.write(target, parsed, sliding, 1.0, rotation_joints=range(len(skeleton)), location_joints=[0])
    return reference_labels(skeleton, cycle, rig, CMU_TO_METRES)


def loop_with_cycles_modifiers(obj):
    """Cycles on every curve; the hips' location repeats with offset (it travels)."""
    from foot_lock.adapters import action_compat

    for fcurve in action_compat.iter_fcurves(obj, obj.animation_data.action):
        modifier = fcurve.modifiers.new("CYCLES")
        if fcurve.data_path.endswith(".location"):
            modifier.mode_before = modifier.mode_after = "REPEAT_OFFSET"


def played(obj, action, joints, period):
    """World positions (F, joints, 3) over CYCLES cycles, evaluated with the modifiers."""
    from foot_lock.adapters import armature

    start = int(action.frame_range[0])
    skeleton, motion, joint_map = armature.read_motion(obj, action, start, start + CYCLES * period, ["LeftToeBase",
                                                                                                    "RightToeBase"])
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    return gpos[:, [joint_map.joint_names.index(name) for name in joints]]


def test_a_cycled_walk_is_fixed_as_a_loop(addon, clips_dir, tmp_path):
    from foot_lock.adapters import action_compat

    labels = write_cycle_bvh(clips_dir / "cmu_07_01.bvh", tmp_path / "cycle.bvh", 1.25)
    obj = import_clip(addon, tmp_path / "cycle.bvh")
    source = obj.animation_data.action
    loop_with_cycles_modifiers(obj)
    period = labels.shape[1] - 1
    assert tuple(round(f) for f in source.frame_range) == (1, 1 + period)

    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    fixed = obj.animation_data.action
    assert fixed != source
    curves = [fc for fc in action_compat.iter_fcurves(obj, fixed) if not fc.data_path.endswith('"]')]  # not contacts
    assert all(any(m.type == "CYCLES" for m in fc.modifiers) for fc in curves)

    joints = ["Hips", "LeftToeBase", "RightToeBase"]
    before, after = played(obj, source, joints, period), played(obj, fixed, joints, period)
    frames = np.arange(CYCLES * period + 1)
    contacts = labels[:, frames % period]
    toes = after[:, 1:].transpose(1, 0, 2)
    both = contacts[:, 1:] & contacts[:, :-1]
    fps = addon.context.scene.render.fps / addon.context.scene.render.fps_base
    slide = np.linalg.norm(np.diff(toes, axis=1)[..., :2], axis=-1) * fps
    assert 100.0 * slide[both].mean() <= 1.0
    slide_before = np.linalg.norm(np.diff(before[:, 1:].transpose(1, 0, 2), axis=1)[..., :2], axis=-1) * fps
    assert 100.0 * slide_before[both].mean() > 20.0

    # Still a loop: the first and the last pose of a cycle are one pose, moved by the stride.
    stride = after[period, 0] - after[0, 0]
    assert np.abs(after[period] - after[0] - stride).max() * 1000.0 <= 1.0
    # No drift: the pelvis moved as much in the last cycle as in the first.
    deviation = np.linalg.norm(after[:, 0] - before[:, 0], axis=-1)
    per_cycle = [deviation[k * period : (k + 1) * period].mean() for k in range(CYCLES)]
    assert per_cycle[0] > 0.0
    assert per_cycle[-1] <= 1.5 * per_cycle[0]


def test_a_cyclic_manual_frame_range_is_the_cycle(addon, clips_dir, tmp_path):
    """A long take with a manual frame range marked cyclic: that range is solved as a loop
    (the legs' curves end where they start, the contacts wrap) and nothing outside it changes.
    The take's own upper body and heading do not loop: they are not the solve's to change."""
    from blender_scenes import leg_bones, write_sliding_bvh
    from foot_lock.adapters import action_compat

    clip = clips_dir / "cmu_07_01.bvh"
    obj = import_clip(addon, write_sliding_bvh(clip, tmp_path / "sliding.bvh", 1.25))
    source = obj.animation_data.action
    first, last = (frame + 1 for frame in gait_cycle(bvh.to_motion(bvh.read(clip))[1]))  # Blender starts at 1
    source.use_frame_range, source.use_cyclic = True, True
    source.frame_start, source.frame_end = first, last

    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    fixed = obj.animation_data.action
    report = obj.foot_lock.report
    assert report.frames == last - first + 1
    assert report.slide_after <= 1.0 < 20.0 < report.slide_before
    legs = {f'pose.bones["{name}"]' for role in ("thigh", "shin", "foot") for name in leg_bones(obj, role)}
    source_curves = {(fc.data_path, fc.array_index): fc for fc in action_compat.iter_fcurves(obj, source)}
    checked = 0
    for fcurve in action_compat.iter_fcurves(obj, fixed):
        if fcurve.data_path.rpartition(".")[0] in legs:
            assert abs(fcurve.evaluate(last) - fcurve.evaluate(first)) < 1e-4, fcurve.data_path
            original = source_curves[(fcurve.data_path, fcurve.array_index)]
            outside = [*range(1, first), *range(last + 1, 318)]
            assert [fcurve.evaluate(f) for f in outside] == [original.evaluate(f) for f in outside]
            checked += 1
        elif fcurve.data_path.endswith('["foot_contact"]'):
            assert fcurve.evaluate(first) == fcurve.evaluate(last)  # a stance across the seam goes on
    assert checked >= 18


@pytest.mark.parametrize("arm_closes", [True, False])
def test_a_cycle_without_modifiers_is_a_loop_only_if_every_bone_closes(addon, clips_dir, tmp_path, arm_closes):
    """Told by its poses alone, a cycle is a loop when the last pose of every bone is its
    first: legs that close under an arm that does not are no loop (the read converts the
    legs alone, the check still sees the arm)."""
    from foot_lock.adapters import action_compat, jobs

    write_cycle_bvh(clips_dir / "cmu_07_01.bvh", tmp_path / "cycle.bvh", 1.25)
    obj = import_clip(addon, tmp_path / "cycle.bvh")
    if not arm_closes:
        bag = action_compat.channel_bag(obj, obj.animation_data.action)
        arm = action_compat.find_fcurve(bag, 'pose.bones["LeftArm"].rotation_euler', 0)
        arm.keyframe_points[-1].co[1] += 0.1  # radians: the arm ends 6 degrees from where it began
        arm.update()

    outcome = jobs.remove_sliding(obj, addon.context.scene)
    assert ("loop_seam_cm" in outcome.result.after) == arm_closes
