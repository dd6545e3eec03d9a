"""One frame at a time on terrain (numpy only): the runtime lock played over a shared walk
with the ground given as a function, as the add-on's raycasts give it."""

import math

import numpy as np
import pytest
from clip_scenarios import decimate, load, scale_root_motion, settled
from foot_lock.solvers import bvh
from foot_lock.solvers import quaternion as quat
from foot_lock.solvers.foot_lock import FootLockSettings, label_contacts
from foot_lock.solvers.kinematics import forward_kinematics
from foot_lock.solvers.leg_ik import LegOptions
from foot_lock.solvers.runtime_lock import RuntimeSettings, StillGround
from foot_lock.solvers.runtime_pose import TerrainFootLock, play_clip, runtime_clip

UP = np.asarray(bvh.UP, dtype=float)
RISE, RUN, START = 0.12, 0.5, 0.6


@pytest.fixture(scope="module")
def walk():
    skeleton, motion, rig = load("cmu_07_01")
    return skeleton, motion, rig, runtime_clip(skeleton, motion, rig, floor=0.0, up=UP)


def terrain(clip, kind, normal=UP):
    """Height function and ground of flat ground, stairs up or down, a ledge or nothing
    along the walk's direction; ``normal`` is what the rays report."""
    pelvis = clip.gpos[:, clip.rig.pelvis]
    axis = pelvis[-1] - pelvis[0]
    axis -= (axis @ UP) * UP
    axis /= np.linalg.norm(axis)

    def height(points):
        s = (points - pelvis[0]) @ axis - START
        steps = np.maximum(np.floor(s / RUN) + 1.0, 0.0)
        if kind in ("stairs", "down"):
            return (RISE if kind == "stairs" else -RISE) * steps
        if kind == "ledge":  # a block 0.8 m high over a stretch of the walk
            return np.where((s > 0.0) & (s < 1.0), 0.8, 0.0)
        return np.zeros(len(points))

    def ground(origins, distance):
        heights = height(origins)
        top = origins @ UP
        hit = (kind != "none") & (heights <= top) & (heights >= top - distance)
        return heights, np.tile(normal, (len(origins), 1)), hit

    return height, StillGround(ground)


def toes_of(skeleton, rig, rot, pos):
    _, gpos = forward_kinematics(skeleton, rot, pos)
    return gpos[:, [leg.toe for leg in rig.legs]]


@pytest.mark.parametrize("root_scale", [1.0, 1.25])
def test_without_ground_the_feet_lock_on_the_clips_floor(walk, root_scale):
    """No ray hits anywhere: the feet still lock where the bake's labels plant them, at
    their authored height, on the clean walk and with its root motion 1.25x too fast."""
    skeleton, motion, rig, _ = walk
    sliding = scale_root_motion(skeleton, motion, root_scale)
    labels, _ = label_contacts(skeleton, sliding, rig, UP)
    clip = runtime_clip(skeleton, sliding, rig, floor=0.0, contacts=labels, up=UP)
    played = play_clip(TerrainFootLock(clip, up=UP), terrain(clip, "none")[1])
    toes, authored = played.toes, clip.gpos[:, [leg.toe for leg in rig.legs]]
    stance = settled(labels > 0.5, math.ceil(RuntimeSettings().blend_time * clip.fps)).T  # (F, L)
    both = stance[1:] & stance[:-1]
    slide = 100.0 * np.linalg.norm(np.diff(toes - (toes @ UP)[..., None] * UP, axis=0), axis=-1)[both].mean() * clip.fps
    assert np.isfinite(played.rot).all() and np.isfinite(played.pos).all()
    assert slide < 1.0  # cm/s
    assert np.abs(toes @ UP - authored @ UP)[stance].max() < 0.01


def play_on(clip, ground, **options):
    """Toes (F, L, 3) and whether each was locked (F, L), per frame."""
    lock = TerrainFootLock(clip, up=UP, **options)
    toes, locked = [], []
    for frame in range(clip.frames):
        toes.append(lock.step(frame, 1.0 / clip.fps, ground).toes)
        locked.append(lock.locker.locked.copy())
    return np.array(toes), np.array(locked)


@pytest.mark.parametrize("kind", ["stairs", "down"])
def test_stairs_are_walked_with_planted_feet_on_the_steps(walk, kind):
    _, _, rig, clip = walk
    height, ground = terrain(clip, kind)
    toes, locked = play_on(clip, ground)
    authored = clip.gpos[:, [leg.toe for leg in rig.legs]] @ UP
    above = np.stack([toes[:, leg] @ UP - height(toes[:, leg]) for leg in range(len(rig.legs))], axis=1)
    assert locked.mean() > 0.3
    assert np.abs(above - authored)[locked].max() < 0.01
    assert np.abs(height(toes[-1])).min() >= 4 * RISE  # the walk ended several steps up or down


def test_a_ledge_is_not_stepped_on(walk):
    """Ground 0.8 m above the clip's floor is past ``max_correction``: the feet and the
    body stay on the floor beside it."""
    skeleton, _, rig, clip = walk
    _, ground = terrain(clip, "ledge")
    played = play_clip(TerrainFootLock(clip, up=UP), ground)
    assert np.abs(toes_of(skeleton, rig, played.rot, played.pos) @ UP - clip.gpos[:, [leg.toe for leg in rig.legs]] @ UP).max() < 0.02


def test_feet_turn_toward_the_ground_normal_up_to_the_tilt_limit(walk):
    skeleton, _, rig, clip = walk
    pelvis = clip.gpos[:, clip.rig.pelvis]
    forward = pelvis[-1] - pelvis[0]
    forward -= (forward @ UP) * UP
    forward /= np.linalg.norm(forward)
    slope = np.radians(40.0)  # steeper than the limit: the feet stop at it
    _, ground = terrain(clip, "flat", normal=np.cos(slope) * UP - np.sin(slope) * forward)
    limit = np.radians(25.0)
    # The rays report the slope but flat heights: without the floor clamps, which would
    # hold the lowered heels up.
    lock = TerrainFootLock(clip, RuntimeSettings(max_tilt=limit, pelvis_drop_smoothing=0.03),
                           FootLockSettings(leg_options=LegOptions(height_clamp=False)), up=UP)
    played = play_clip(lock, ground)
    _, gpos = forward_kinematics(skeleton, played.rot, played.pos)

    def feet(g):
        return g[:, [leg.toe for leg in rig.legs]] - g[:, [leg.ankle for leg in rig.legs]]

    # Toes up the slope: the authored foot turned by the limit about the slope's level line.
    turn = quat.from_axis_angle(np.cross(forward, UP), limit)
    expected = quat.rotate(turn, feet(clip.gpos))
    shown = feet(gpos)
    cosine = np.sum(shown * expected, axis=-1) / np.linalg.norm(shown, axis=-1) / np.linalg.norm(expected, axis=-1)
    settled = slice(round(0.2 * clip.fps), None)  # the ground's normal eases in
    error = np.degrees(np.arccos(np.clip(cosine[settled], -1.0, 1.0)))
    # Where a leg is at full reach the leg solver moves the heel a little: a degree or two,
    # against 15 without the limit and 25 without turning at all.
    assert np.median(error) < 0.5 and error.max() < 3.0


def test_stairs_in_centimetres_are_walked_as_in_metres(walk):
    """Same walk and stairs, everything x100 (a centimetre scene): the same result x100."""
    skeleton, motion, rig, clip = walk
    _, ground = terrain(clip, "stairs")
    metres, _ = play_on(clip, ground)
    cm_motion = motion.copy()
    cm_motion.pos *= 100.0
    cm_clip = runtime_clip(skeleton, cm_motion, rig, floor=0.0, up=UP)

    def cm_ground(origins, distance):
        heights, normals, hit, _ = ground(origins / 100.0, distance / 100.0)
        return 100.0 * heights, normals, hit

    centimetres, _ = play_on(cm_clip, StillGround(cm_ground))
    assert np.abs(centimetres / 100.0 - metres).max() < 1e-6


@pytest.mark.parametrize("fps", [24, 30, 60])
def test_the_pelvis_comes_back_eased_at_any_frame_rate(fps):
    """cmu_131_01 with its root 1.2x too fast, without ground: each stance's foot, held
    behind, needs the pelvis about 9 cm lower by the time it lets go. It comes back up eased,
    as fast in seconds at any frame rate, its speed never jumping: the pelvis's sharpest
    acceleration stays near the clip's own (it sprang back within a frame: 5.0x the clip's at
    24 and 30 fps, 2.2x at 60; now 1.1, 1.4, 1.0x) and it rises back at most 0.3 m/s above
    the animation (1.55, 1.25, 1.7 m/s: 6.5 cm in a frame at 24 fps; now 0.24, 0.25, 0.21). The
    feet still lock where they are planted, at their authored height."""
    skeleton, motion, rig = load("cmu_131_01")
    sliding = scale_root_motion(skeleton, decimate(motion, fps), 1.2)
    labels, _ = label_contacts(skeleton, sliding, rig, UP)
    clip = runtime_clip(skeleton, sliding, rig, floor=0.0, contacts=labels, up=UP)
    played = play_clip(TerrainFootLock(clip, up=UP), terrain(clip, "none")[1])
    _, gpos = forward_kinematics(skeleton, played.rot, played.pos)
    pelvis, authored = gpos[:, rig.pelvis], clip.gpos[:, rig.pelvis]

    def acceleration_peak(path):
        return np.linalg.norm(np.diff(path, 2, axis=0), axis=-1).max() * fps**2

    rise_speed = np.diff((pelvis - authored) @ UP).max() * fps
    toes = played.toes
    stance = settled(labels > 0.5, math.ceil(RuntimeSettings().blend_time * fps)).T
    assert acceleration_peak(pelvis) <= 1.6 * acceleration_peak(authored)
    assert rise_speed <= 0.3  # m/s
    assert np.abs(toes @ UP - clip.gpos[:, [leg.toe for leg in rig.legs]] @ UP)[stance].max() < 0.01
    across = toes - (toes @ UP)[..., None] * UP
    both = stance[1:] & stance[:-1]
    assert np.linalg.norm(np.diff(across, axis=0), axis=-1)[both].max() < 0.001  # locked: under a millimetre a frame
