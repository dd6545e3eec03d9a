"""Heel and toe contact curves in real Blender: Detect Contacts keys a ``heel_contact``
curve on each foot bone beside the toe's ``foot_contact``, Remove Foot Sliding pins the
heel (the foot bone's head) and the ball (the toe bone's head) while their curves say so,
and obeys a heel curve the animator keyed."""

import numpy as np
import pytest
from blender_scenes import import_clip, leg_bones, world_joints, write_sliding_bvh

pytestmark = pytest.mark.blender

PIN = 1e-4  # m: a pinned point moves less than a tenth of a millimetre per frame


def pinned_steps(points, weights):
    """Per leg, the largest step (m) of (F, L, 3) points between two fully pinned frames."""
    both = (weights[:, 1:] >= 1.0) & (weights[:, :-1] >= 1.0)
    steps = np.linalg.norm(np.diff(points, axis=0), axis=-1).T
    return [row[pinned].max() if pinned.any() else 0.0 for row, pinned in zip(steps, both)]


def test_heel_curves_are_keyed_pinned_and_an_edited_one_is_obeyed(addon, clips_dir, tmp_path):
    from foot_lock.adapters import action_compat, armature

    obj = import_clip(addon, write_sliding_bvh(clips_dir / "cmu_07_01.bvh", tmp_path / "walk.bvh", 1.25))
    assert addon.ops.foot_lock.detect_contacts() == {"FINISHED"}
    source = obj.animation_data.action
    feet, toes = leg_bones(obj, "foot"), leg_bones(obj, "toe")
    paths = {fc.data_path for fc in action_compat.iter_fcurves(obj, source)}
    assert {armature.contact_data_path(foot, armature.HEEL_CONTACT_PROPERTY) for foot in feet} <= paths
    assert {armature.contact_data_path(toe) for toe in toes} <= paths
    frames = np.arange(1, 318)

    def curves(bones, prop):
        return np.array([armature.read_contact_curve(obj, source, bone, frames, prop) for bone in bones])

    detected_heels = curves(feet, armature.HEEL_CONTACT_PROPERTY)
    assert set(np.unique(detected_heels)) == {0.0, 1.0} and (detected_heels.sum(axis=1) > 30).all()

    # The animator keys the left heel off: only its ball may be pinned.
    armature.write_contact_curve(obj, source, feet[0], frames, np.zeros(len(frames)), armature.HEEL_CONTACT_PROPERTY,
                                 stamp=False)  # keyed by hand
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    heels_keyed, toes_keyed = curves(feet, armature.HEEL_CONTACT_PROPERTY), curves(toes, armature.CONTACT_PROPERTY)
    assert not heels_keyed[0].any() and np.array_equal(heels_keyed[1], detected_heels[1])  # nothing overwritten

    ankles, balls = world_joints(obj, feet), world_joints(obj, toes)
    assert pinned_steps(balls, toes_keyed) < [PIN, PIN]
    assert pinned_steps(ankles[:, 1:], heels_keyed[1:]) < [PIN]  # the right heel holds
    # Where the left heel was labelled and its ball not, the unpinned heel moves on.
    heel_only = detected_heels[:1] * (1.0 - toes_keyed[:1])
    assert pinned_steps(ankles[:, :1], heel_only)[0] > 10 * PIN
