"""The runtime lock played over a whole clip solves the legs of every frame at once
(numpy only): it must pose every frame exactly as stepping the lock one frame at a time
does, where each frame's legs are solved on their own."""

import numpy as np
import pytest
from clip_scenarios import load, scale_root_motion
from foot_lock.solvers.foot_lock import label_contacts
from foot_lock.solvers.runtime_pose import TerrainFootLock, play_clip, runtime_clip
from test_runtime_pose import UP, terrain


def walk_clip(root_scale):
    skeleton, motion, rig = load("cmu_07_01")
    motion = scale_root_motion(skeleton, motion, root_scale)
    labels, _ = label_contacts(skeleton, motion, rig, UP)
    return runtime_clip(skeleton, motion, rig, floor=0.0, contacts=labels, up=UP)


def sloped(clip, degrees):
    """A normal tilted up the walk by ``degrees``: the feet turn on some frames only."""
    pelvis = clip.gpos[:, clip.rig.pelvis]
    forward = pelvis[-1] - pelvis[0]
    forward -= (forward @ UP) * UP
    forward /= np.linalg.norm(forward)
    return np.cos(np.radians(degrees)) * UP - np.sin(np.radians(degrees)) * forward


@pytest.mark.parametrize(("root_scale", "kind", "degrees"), [(1.0, "stairs", 0.0), (1.25, "stairs", 8.0),
                                                              (1.25, "none", 0.0), (1.0, "down", 8.0)])
def test_playing_the_clip_poses_each_frame_as_stepping_it_does(root_scale, kind, degrees):
    clip = walk_clip(root_scale)
    _, ground = terrain(clip, kind, normal=sloped(clip, degrees))
    played = play_clip(TerrainFootLock(clip, up=UP), ground)
    lock = TerrainFootLock(clip, up=UP)
    stepped = [lock.step(frame, 1.0 / clip.fps, ground) for frame in range(clip.frames)]
    for name in ("rot", "pos", "toes", "toe_inputs"):
        expected = np.stack([getattr(result, name) for result in stepped])
        assert np.abs(getattr(played, name) - expected).max() < 1e-9, name
    assert all(np.array_equal(a, b.contacts) for a, b in zip(played.contacts, stepped))
    moved = np.abs(played.rot - clip.rot).max(axis=(1, 2)) > 1e-3
    assert moved.mean() > 0.3  # the lock posed the legs on most frames: the comparison covers them
