"""Shared-clip scenarios of the clips README: the sliding input and its reference labels."""

import os
from pathlib import Path

import numpy as np
from foot_lock.solvers import bvh, kinematics
from foot_lock.solvers import quaternion as quat
from foot_lock.solvers.contacts import reference_contacts
from foot_lock.solvers.kinematics import forward_kinematics
from foot_lock.solvers.leg_ik import measure_legs, solve_legs
from foot_lock.solvers.quaternion import horizontal
from foot_lock.solvers.rig import Leg, Rig

CMU_TO_METRES = bvh.CMU_UNIT
def find_clips_dir():
    """FOOT_LOCK_CLIPS if set (a folder with more or other clips under the same names),
    else the clips bundled with the tests in ``tests/data``."""
    override = os.environ.get("FOOT_LOCK_CLIPS")
    if override:
        return Path(override).expanduser().resolve()
    return Path(__file__).resolve().parent / "data"


CLIPS_DIR = find_clips_dir()
ALL_CLIPS = ["cmu_131_01", "cmu_131_02", "cmu_131_03", "cmu_01_01", "cmu_03_01", "cmu_07_01", "cmu_03_02"]


def load(name, scale=CMU_TO_METRES, clips_dir=CLIPS_DIR):
    return bvh.load(Path(clips_dir) / f"{name}.bvh", scale)


def load_run_at_30_fps():
    """CMU 02_03, a run, at 30 fps: bundled in ``tests/data`` and read from there whatever
    FOOT_LOCK_CLIPS says (see its README)."""
    return bvh.load(Path(__file__).resolve().parent / "data" / "cmu_02_03_run30.bvh", CMU_TO_METRES)


def scale_root_motion(skeleton, motion, factor, up=bvh.UP):
    """The README's sliding scenario: the root's horizontal translation scaled about frame 0."""
    return kinematics.scale_root_motion(skeleton, motion, factor, up)


def toe_positions(skeleton, motion, rig):
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    return np.stack([gpos[:, leg.toe] for leg in rig.legs])


def pelvis_acceleration_peak(skeleton, motion, rig):
    """The pelvis's sharpest acceleration (m/s^2) over the clip: a jolt shows here."""
    pelvis = forward_kinematics(skeleton, motion.rot, motion.pos)[1][:, rig.pelvis]
    return float(np.linalg.norm(np.diff(pelvis, 2, axis=0), axis=1).max()) * motion.fps**2


def reference_labels(skeleton, motion, rig, unit_scale=1.0):
    """Reference contacts of the (unscaled) clip, per the clips README."""
    return reference_contacts(toe_positions(skeleton, motion, rig), motion.fps, unit_scale)


def settled(contacts, frames):
    """Contact frames (L, F) from the ``frames``-th frame of each contact on (the runtime
    lock's first ``blend_time`` of a contact is its inertialized catch-up, not the stance)."""
    contacts = np.asarray(contacts, dtype=bool)
    out = np.zeros_like(contacts)
    for leg, row in enumerate(contacts):
        run = 0
        for f, on in enumerate(row):
            run = run + 1 if on else 0
            out[leg, f] = run > frames
    return out


def f1_score(found, reference):
    found, reference = np.asarray(found) > 0.5, np.asarray(reference) > 0.5
    true_positive = np.sum(found & reference)
    return 2.0 * true_positive / max(found.sum() + reference.sum(), 1)


def smoothed_travel(motion, window=1.0, up=bvh.UP):
    """(F, 3) the root's horizontal travel, averaged over ``window`` seconds: root motion."""
    up = np.asarray(up, dtype=float)
    width = int(window * motion.fps) | 1
    kernel = np.ones(width) / width
    travel = np.stack(
        [np.convolve(np.pad(motion.pos[:, 0, a], width // 2, mode="edge"), kernel, "valid") for a in range(3)], -1
    )
    return travel - (travel @ up)[:, None] * up


def in_place(motion, window=1.0):
    """The clip walking in place, game-style: its smoothed root travel taken away."""
    still = motion.copy()
    still.pos[:, 0] -= smoothed_travel(motion, window) - smoothed_travel(motion, window)[:1]
    return still


def with_ground_root(skeleton, motion, rig, window=1.0):
    """The clip re-rigged game-style: a new root joint on the ground carries the smoothed
    horizontal travel (root motion), the pelvis below it keeps only the rest (sway, height)."""
    frames = motion.frames
    pelvis_root = motion.pos[:, 0]
    travel = smoothed_travel(motion, window)
    rot = np.concatenate([np.tile([1.0, 0.0, 0.0, 0.0], (frames, 1, 1)), motion.rot], axis=1)
    pos = np.concatenate([travel[:, None], motion.pos], axis=1)
    pos[:, 1] = pelvis_root - travel
    parents = [-1, 0] + [p + 1 for p in skeleton.parents[1:]]
    legs = [Leg(leg.name, leg.hip + 1, leg.knee + 1, leg.ankle + 1, leg.toe + 1,
                None if leg.toe_end is None else leg.toe_end + 1) for leg in rig.legs]
    return (
        kinematics.Skeleton(["root", *skeleton.names], parents),
        kinematics.Motion(rot, pos, motion.fps),
        Rig(rig.pelvis + 1, legs),
    )


def with_front_legs(skeleton, motion, rig, offset=(0.0, 0.0, 0.9)):
    """A four-legged version of a biped clip: a chest joint ``offset`` (world axes) from the
    pelvis carries a copy of both legs, moving exactly as the hind legs do (a pacing gait)."""
    from foot_lock.solvers import quaternion as quat

    names, parents = list(skeleton.names), list(skeleton.parents)
    rots, poss = [motion.rot], [motion.pos]
    grot, _ = forward_kinematics(skeleton, motion.rot, motion.pos)
    pelvis_rot = grot[:, rig.pelvis]
    chest = len(names)
    names.append("chest")
    parents.append(rig.pelvis)
    rots.append(quat.conjugate(pelvis_rot)[:, None])  # the chest keeps world axes
    poss.append(quat.rotate(quat.conjugate(pelvis_rot), np.broadcast_to(offset, (motion.frames, 3)))[:, None])
    legs = list(rig.legs)
    for leg in rig.legs:
        copies = {}
        for j in skeleton.chain(rig.pelvis, leg.toe_end)[1:]:
            copies[j] = len(names)
            names.append("front_" + skeleton.names[j])
            first = skeleton.parents[j] == rig.pelvis
            parents.append(chest if first else copies[skeleton.parents[j]])
            # Below the chest, the first joint takes on the pelvis rotation the chest undid.
            rots.append((quat.multiply(pelvis_rot, motion.rot[:, j]) if first else motion.rot[:, j])[:, None])
            poss.append((quat.rotate(pelvis_rot, motion.pos[:, j]) if first else motion.pos[:, j])[:, None])
        legs.append(Leg("front_" + leg.name, *(copies[j] for j in (leg.hip, leg.knee, leg.ankle, leg.toe, leg.toe_end))))
    return (
        kinematics.Skeleton(names, parents),
        kinematics.Motion(np.concatenate(rots, axis=1), np.concatenate(poss, axis=1), motion.fps),
        Rig(rig.pelvis, legs),
    )


def drift_root_motion(skeleton, motion, start=0.8, end=1.2, up=bvh.UP):
    """A runtime whose root-speed factor drifts from ``start`` to ``end`` over the clip: every
    horizontal step of the roots is scaled by that frame's factor (no single factor fits)."""
    drifted = motion.copy()
    factor = np.linspace(start, end, motion.frames - 1)[:, None]
    for root in np.flatnonzero(skeleton.parents < 0):
        steps = np.diff(motion.pos[:, root], axis=0)
        extra = (factor - 1.0) * horizontal(steps, up)
        drifted.pos[1:, root] += np.cumsum(extra, axis=0)
    return drifted


def turned_by_runtime(motion, degrees, up=bvh.UP):
    """A runtime turning a straight walk by ``degrees`` over the clip at an even rate: the root
    joint's rotation turned about ``up`` and its horizontal steps turned with it (a walk along
    an arc). The planted feet swing about the root with the turn: no share of the root's
    velocity explains them. ``motion``'s root is joint 0, its position the world's."""
    turned = motion.copy()
    angles = np.radians(degrees) * np.arange(motion.frames) / (motion.frames - 1)
    axis = np.broadcast_to(np.asarray(up, dtype=float), (motion.frames, 3))
    turned.rot[:, 0] = quat.multiply(quat.from_axis_angle(axis, angles), motion.rot[:, 0])
    steps = np.diff(motion.pos[:, 0], axis=0)
    flat = horizontal(steps, up)
    midway = quat.from_axis_angle(axis[1:], 0.5 * (angles[1:] + angles[:-1]))
    turned.pos[1:, 0] = motion.pos[0, 0] + np.cumsum(quat.rotate(midway, flat) + (steps - flat), axis=0)
    return turned


def decimate(motion, fps):
    """Every n-th frame of ``motion`` so it plays at ``fps`` (a divisor of its own rate)."""
    step = round(motion.fps / fps)
    return kinematics.Motion(motion.rot[::step].copy(), motion.pos[::step].copy(), motion.fps / step,
                             dict(motion.meta))


def oscillating_skate(points, fps, speed=1.0, frequency=1.5, phase=0.0):
    """Points (L, F, 3) sliding to and fro along x at up to ``speed`` m/s, planted or not
    (strongly skated motion: no moving ground explains it). ``phase`` (radians, one value or
    one per row (L,)): 0 slides every point in step, as one oscillating belt under both feet
    would; different phases per foot slide each foot on its own, as a clip whose feet were
    posed (or generated) separately does."""
    t = np.arange(points.shape[1]) / fps
    phase = np.broadcast_to(np.asarray(phase, dtype=float), points.shape[:1])[:, None]
    offset = speed / (2 * np.pi * frequency) * np.sin(2 * np.pi * frequency * t + phase)
    return points + offset[..., None] * np.array([1.0, 0.0, 0.0])


def random_waves(legs, frames, fps, seed, frequencies, waves, up):
    """Per row of ``legs`` ``waves`` waves of random frequency (in ``frequencies``, Hz), phase
    and horizontal direction over ``frames`` frames: their angles (L, waves, F), frequencies
    (L, waves, 1) and unit directions (L, waves, 1, 3)."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames) / fps
    frequency = rng.uniform(*frequencies, size=(legs, waves, 1))
    phase = rng.uniform(0.0, 2 * np.pi, size=(legs, waves, 1))
    direction = horizontal(rng.normal(size=(legs, waves, 1, 3)), np.asarray(up, dtype=float))
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    return 2 * np.pi * frequency * t + phase, frequency, direction


def random_skate(points, fps, speed=1.0, seed=0, frequencies=(1.0, 3.0), waves=3, up=bvh.UP):
    """Points (L, F, 3) of L feet each sliding on its own, smoothly and at random: per row a
    sum of ``waves`` oscillations of random frequency (in ``frequencies``, Hz), phase and
    horizontal direction, scaled to a root-mean-square speed of ``speed`` m/s."""
    angle, frequency, direction = random_waves(*points.shape[:2], fps, seed, frequencies, waves, up)
    offset = (np.sin(angle)[..., None] / (2 * np.pi * frequency[..., None]) * direction).sum(1)
    velocity = np.gradient(offset, axis=1) * fps
    return points + offset * speed / np.sqrt(np.mean(np.sum(velocity**2, axis=-1)))


def stance_drift(points, fps, stances, speed=0.5, seed=0, frequencies=(0.05, 0.5), waves=3, together=False,
                 up=bvh.UP):
    """Points (L, F, 3) of L feet each drifting on its own while it stands (``stances`` (L, F),
    the unskated clip's contacts) and carried back to its own path by the swing that follows:
    per row a velocity summing ``waves`` slow waves of random frequency (in ``frequencies``,
    Hz), phase and horizontal direction, of root-mean-square ``speed`` m/s. A slow skate that
    runs on from stance to stance (:func:`random_skate` below 1 Hz) carries the foot a metre
    from the body, beyond the leg's reach, and the legs lift the stance foot off the floor;
    this one stays a stance's drift (0.7 m/s over a 0.6 s stance: about 0.4 m). ``together``:
    one velocity for every foot, as a belt's under whichever foot stands on it."""
    frames = points.shape[1]
    angle, _, direction = random_waves(1 if together else len(points), frames, fps, seed, frequencies, waves, up)
    velocity = (np.cos(angle)[..., None] * direction).sum(1)
    velocity *= speed / np.sqrt(np.mean(np.sum(velocity**2, axis=-1)))
    velocity = np.broadcast_to(velocity, points.shape)
    offset = np.zeros_like(points)
    for leg, standing in enumerate(np.asarray(stances, dtype=bool)):
        if not standing.any():
            continue
        travelled = np.cumsum(velocity[leg] * standing[:, None], axis=0) / fps
        # Each stance starts where the foot lands: the travel before it is taken off.
        start = standing & ~np.concatenate([[False], standing[:-1]])
        before = np.maximum.accumulate(np.where(start, np.arange(frames), 0))
        drifted = travelled - travelled[before] + velocity[leg][before] * standing[before, None] / fps
        known = np.flatnonzero(standing)  # the swings go from the last stance's drift back to none
        offset[leg] = np.stack([np.interp(np.arange(frames), known, drifted[known, axis]) for axis in range(3)], -1)
    return points + offset


def skated_motion(skeleton, motion, rig, skate, up=bvh.UP):
    """``motion`` skating as real skated clips do, in its joint rotations: each foot's heel
    (ankle) and ball (toe) moved by ``skate`` -- a function of points (L, F, 3) and their frame
    rate, such as :func:`oscillating_skate` -- and the legs solved to them by the project's
    own leg solver, so hip, knee and ankle rotations carry the skate. The pelvis keeps its
    path; where a moved foot is beyond the leg's reach, the soft clamp keeps it short."""
    grot, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    heels, toes = (np.stack([gpos[:, getattr(leg, joint)] for leg in rig.legs]) for joint in ("ankle", "toe"))
    limits = measure_legs(grot, gpos, rig.legs, up)
    pose = kinematics.Pose(skeleton, motion.rot.copy(), motion.pos.copy(), grot, gpos)
    solve_legs(pose, rig.legs, limits, skate(toes, motion.fps), up, heel_targets=skate(heels, motion.fps))
    return kinematics.Motion(pose.rot, pose.pos, motion.fps, dict(motion.meta))


def compression_step(motion, factor, fps):
    """Frames of ``motion`` per frame of it played ``factor`` times faster at ``fps``."""
    return round(motion.fps * factor / fps)


def time_compressed(motion, factor, fps=30):
    """The clip played ``factor`` times faster, sampled at ``fps``: a walk made a run or a
    dash, its stances 3-6 frames long at 30 fps (x3); below 1, slower (a 120 fps walk at 0.25
    is every frame of it played at 30 fps: a sneak). Its reference labels are the original's
    at the same frames: ``reference[:, ::compression_step(motion, factor, fps)]``."""
    step = compression_step(motion, factor, fps)
    return kinematics.Motion(motion.rot[::step].copy(), motion.pos[::step].copy(), float(fps), dict(motion.meta))


def root_scenarios(skeleton, motion):
    """The Targets' sliding inputs by name: root speed x1.0 / x0.75 / x1.25 and a drifting factor."""
    return {
        "x1.00": motion,
        "x0.75": scale_root_motion(skeleton, motion, 0.75),
        "x1.25": scale_root_motion(skeleton, motion, 1.25),
        "drift": drift_root_motion(skeleton, motion),
    }


def gait_cycle(motion, up=bvh.UP):
    """(first, last) frames 0.8-1.5 s apart whose poses (joint rotations, pelvis height)
    match best: one gait cycle of a walk."""
    up = np.asarray(up, dtype=float)
    rotations = motion.rot[:, 1:] * np.sign(motion.rot[:, 1:, :1])  # one sign per rotation
    features = np.concatenate([rotations.reshape(motion.frames, -1), (motion.pos[:, :1] @ up)], axis=1)
    shortest, longest = round(0.8 * motion.fps), round(1.5 * motion.fps)
    _, first, last = min(
        (np.linalg.norm(features[i] - features[i + length]), i, i + length)
        for length in range(shortest, longest + 1) for i in range(motion.frames - length)
    )
    return first, last


def walk_cycle(motion, up=bvh.UP):
    """One gait cycle of a walk made into a loop: its last pose made the first again plus
    the cycle's horizontal travel, the difference spread over the cycle."""
    from foot_lock.solvers import loops
    from foot_lock.solvers.quaternion import horizontal

    first, last = gait_cycle(motion, up)
    cycle = kinematics.Motion(motion.rot[first : last + 1].copy(), motion.pos[first : last + 1].copy(), motion.fps)
    offset = np.zeros_like(cycle.pos[0])
    offset[0] = horizontal(cycle.pos[-1, 0] - cycle.pos[0, 0], up)
    return loops.close_seam(cycle, offset)[0]


def toe_labels(skeleton, motion, rig, settings=None):
    """The contact labeller's own toe labels (L, F), before the solve's heel/toe bridging."""
    from foot_lock.solvers.contacts import detect_contacts
    from foot_lock.solvers.foot_lock import travel
    from foot_lock.solvers.rig import leg_length

    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    toes = np.stack([gpos[:, leg.toe] for leg in rig.legs])
    return detect_contacts(toes, travel(skeleton, gpos, rig, bvh.UP), bvh.UP, motion.fps, leg_length(gpos, rig),
                           settings)[0]


def jittered(motion, degrees, seed=0):
    """A copy of ``motion`` with every joint's rotation jittered independently each frame by
    a random turn of ``degrees`` (std) about a random axis: capture noise (a markerless or
    noisy optical solve), which moves the feet by millimetres from frame to frame."""
    from foot_lock.solvers import quaternion

    rng = np.random.default_rng(seed)
    axes = rng.normal(size=motion.rot.shape[:-1] + (3,))
    axes /= np.linalg.norm(axes, axis=-1, keepdims=True)
    half_angles = 0.5 * np.radians(degrees) * rng.normal(size=motion.rot.shape[:-1])
    turns = np.concatenate([np.cos(half_angles)[..., None], np.sin(half_angles)[..., None] * axes], axis=-1)
    return kinematics.Motion(quaternion.multiply(motion.rot, turns), motion.pos.copy(), motion.fps, dict(motion.meta))


GLITCH_DROP = tuple(-0.06 * np.asarray(bvh.UP))  # m: the whole body 6 cm down


def glitched(motion, shift=GLITCH_DROP, every=1.0, seconds=0.017):
    """A copy of ``motion`` whose whole body is thrown ``shift`` (3,) m off (by default 6 cm
    down) for ``seconds`` (at least a frame) every ``every`` s, from half a period in: capture
    glitches, as a clip's bad first frame, a marker dropout or a pop leaves them."""
    glitches = motion.copy()
    period, length = round(every * motion.fps), max(1, round(seconds * motion.fps))
    for start in range(period // 2, motion.frames, period):
        glitches.pos[start : start + length, 0] += shift
    return glitches


def stair_labels(skeleton, motion, rig, stances, rise=0.08):
    """The labeller's toe labels (L, F) of ``motion``'s feet walking up a staircase (down it for
    a negative ``rise``; :func:`stair_heights` of its ``stances``), the root rising with the
    lower foot, at the flat walk's pace."""
    from foot_lock.solvers.contacts import detect_foot_contacts
    from foot_lock.solvers.foot_lock import travel
    from foot_lock.solvers.rig import leg_length

    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    steps = stair_heights(stances, motion.fps, rise)[..., None] * np.asarray(bvh.UP)
    heels, toes = (np.stack([gpos[:, getattr(leg, joint)] for leg in rig.legs]) + steps for joint in ("ankle", "toe"))
    root = travel(skeleton, gpos, rig, bvh.UP) + steps.min(axis=0)
    return detect_foot_contacts(heels, toes, root, bvh.UP, motion.fps, leg_length(gpos, rig), foot_edges=False)[1]


def stair_heights(stances, fps, rise=0.08, merge=0.2):
    """Per foot and frame (L, F), how far up a staircase the feet of a flat walk are (down it
    for a negative ``rise``, m per step): each stance (``stances`` (L, F), the flat clip's
    contacts; runs less than ``merge`` s apart are one) on its own step, the feet taking
    alternate steps, and the swings rising smoothly from one step to the next."""
    legs, frames = stances.shape
    heights = np.zeros((legs, frames))
    index = np.arange(frames)
    for leg, standing in enumerate(np.asarray(stances, dtype=bool)):
        last = np.maximum.accumulate(np.where(standing, index, -frames))
        following = np.minimum.accumulate(np.where(standing, index, 2 * frames)[::-1])[::-1]
        standing = following - last <= merge * fps
        starts = standing & ~np.concatenate([[False], standing[:-1]])
        steps = rise * (2 * np.cumsum(starts) + leg)
        known = np.flatnonzero(standing)
        heights[leg] = np.interp(np.arange(frames), known, steps[known])
    return heights
