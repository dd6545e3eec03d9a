"""The offline foot lock end to end on real mocap, and on bad input."""

import numpy as np
import pytest
from clip_scenarios import (
    CMU_TO_METRES,
    decimate,
    f1_score,
    glitched,
    jittered,
    load,
    pelvis_acceleration_peak,
    reference_labels,
    scale_root_motion,
    toe_positions,
    with_front_legs,
)
from foot_lock.solvers import banded, bvh, metrics, offline_lock, quaternion, swivels
from foot_lock.solvers.banded import (
    BORDERED_BLOCKS,
    ChainInverse,
    solve_block_tridiagonal,
    solve_low_rank_update,
    solve_mostly_separable,
    solve_tridiagonal,
    spd_inverse,
)
from foot_lock.solvers.contacts import ContactSettings, fill_gaps
from foot_lock.solvers.foot_lock import label_foot_contacts, remove_foot_sliding
from foot_lock.solvers.kinematics import Motion, SolverInputError, forward_kinematics
from foot_lock.solvers.offline_lock import OfflineWeights
from foot_lock.solvers.rig import Leg, Rig

PIN = 1e-4  # m: a pinned point moves less than a tenth of a millimetre per frame
# m: the stretch past its reach the lock leaves a leg of under 0.9 m to the leg solver's soft clamp
WITHIN_REACH = OfflineWeights().reach_tolerance * 0.9


def slide_cm_s(skeleton, motion, rig, contacts):
    return 100.0 * metrics.toe_slide(toe_positions(skeleton, motion, rig), contacts, bvh.UP, motion.fps)


@pytest.fixture(scope="module")
def walk_125():
    skeleton, motion, rig = load("cmu_131_01")
    reference = reference_labels(skeleton, motion, rig)
    sliding = scale_root_motion(skeleton, motion, 1.25)
    return skeleton, sliding, rig, reference, remove_foot_sliding(skeleton, sliding, rig, bvh.UP)


def test_sliding_drops_below_one_cm_per_second(walk_125):
    skeleton, sliding, rig, reference, result = walk_125
    assert slide_cm_s(skeleton, sliding, rig, reference) > 10.0
    assert slide_cm_s(skeleton, result.motion, rig, reference) < 1.0


def test_pelvis_stays_close_and_nothing_goes_under_the_ground(walk_125):
    _, _, _, _, result = walk_125
    assert result.after["pelvis_deviation_cm"] < 4.0
    assert result.after["toe_penetration_cm"] < 0.05
    assert result.after["full_extension_share"] <= result.before["full_extension_share"]
    assert result.after["ankle_accel_p99"] <= 1.5 * result.before["ankle_accel_p99"]


def test_locked_toes_move_less_than_a_millimetre_between_contact_frames(walk_125):
    skeleton, _, rig, _, result = walk_125
    assert result.lock_residual < 1e-3
    toes = toe_positions(skeleton, result.motion, rig)
    locked = (result.contacts[:, 1:] >= 1.0) & (result.contacts[:, :-1] >= 1.0)
    steps = np.linalg.norm(np.diff(toes, axis=1), axis=-1)
    assert steps[locked].max() < 1e-3


def test_only_leg_rotations_and_pelvis_translation_change(walk_125):
    _, sliding, _, _, result = walk_125
    changed_rot = np.flatnonzero(np.any(np.abs(result.motion.rot - sliding.rot) > 1e-12, axis=(0, 2)))
    changed_pos = np.flatnonzero(np.any(np.abs(result.motion.pos - sliding.pos) > 1e-12, axis=(0, 2)))
    assert set(changed_rot) <= set(result.rotation_joints)
    assert set(changed_pos) <= set(result.location_joints)


@pytest.mark.parametrize("fps", [30, 120])
def test_a_leg_without_keys_is_left_out_and_the_other_leg_keeps_its_stances(fps):
    """A biped whose right leg has no keys hangs in one pose, carried by the body: its foot
    glides with it on every frame. Read with the walking leg it threw that leg's labels off
    (F1 0.95 -> 0.90, 2-3 cm/s of slide left). The still leg is not labelled and says so;
    the walking one is labelled, and fixed, as in the clip where both legs walk."""
    skeleton, motion, rig = load("cmu_03_01")
    reference = reference_labels(skeleton, motion, rig)[0, :: round(120 / fps)]
    motion = decimate(scale_root_motion(skeleton, motion, 1.25), fps)
    still = motion.copy()
    for joint in skeleton.chain(rig.pelvis, rig.legs[1].toe)[1:]:
        still.rot[:, joint] = still.rot[0, joint]
    walking = label_foot_contacts(skeleton, motion, rig, bvh.UP)[1][0]
    heel, toe, _ = label_foot_contacts(skeleton, still, rig, bvh.UP)
    assert not heel[1].any() and not toe[1].any()
    assert f1_score(toe[0], reference) >= f1_score(walking, reference) - 0.02
    result = remove_foot_sliding(skeleton, still, rig, bvh.UP)
    assert [w for w in result.warnings if "does not move of its own" in w] == [
        "the right leg does not move of its own (one pose all clip, carried by the body: no keys?): not labelled, "
        "nothing locked; remove it in the Legs panel if not a leg"]
    assert slide_cm_s(skeleton, result.motion, rig, np.stack([reference, np.zeros_like(reference)])) <= 0.5


def test_stances_on_raised_blocks_are_locked_where_they_stand():
    skeleton, motion, rig = load("cmu_03_01")
    result = remove_foot_sliding(skeleton, motion, rig, bvh.UP)
    before = toe_positions(skeleton, motion, rig) @ np.array(bvh.UP)
    after = toe_positions(skeleton, result.motion, rig) @ np.array(bvh.UP)
    stance = result.contacts >= 1.0
    floor = before.min()
    raised = stance & (before > floor + 0.1)
    assert raised.sum() > 50  # the clip really stands on blocks
    assert np.abs(after[raised] - before[raised]).mean() < 0.01


def test_hand_keyed_soft_contact_eases_the_lock():
    skeleton, motion, rig = load("cmu_07_01")
    sliding = scale_root_motion(skeleton, motion, 1.25)
    contacts = reference_labels(skeleton, motion, rig).astype(float)
    heels_off = np.zeros_like(contacts)  # keyed too: only the toe curves lock
    hard = remove_foot_sliding(skeleton, sliding, rig, bvh.UP, contacts=contacts, heel_contacts=heels_off)
    soft = remove_foot_sliding(skeleton, sliding, rig, bvh.UP, contacts=0.5 * contacts, heel_contacts=heels_off)
    free = slide_cm_s(skeleton, sliding, rig, contacts)
    assert slide_cm_s(skeleton, hard.motion, rig, contacts) < 1.0
    assert 0.2 * free < slide_cm_s(skeleton, soft.motion, rig, contacts) < 0.8 * free


def test_edited_contacts_are_obeyed():
    skeleton, motion, rig = load("cmu_07_01")
    sliding = scale_root_motion(skeleton, motion, 1.25)
    reference = reference_labels(skeleton, motion, rig)
    edited = reference.astype(float)
    edited[0] = 0.0  # the animator keyed the first foot's contact off, heel and toe
    heels = np.full_like(edited, np.nan)  # the second foot's heel has no curve: labelled
    heels[0] = 0.0
    result = remove_foot_sliding(skeleton, sliding, rig, bvh.UP, contacts=edited, heel_contacts=heels)
    assert not result.heel_contacts[0].any() and result.heel_contacts[1].any()
    toes = toe_positions(skeleton, result.motion, rig)
    first = 100.0 * metrics.toe_slide(toes[:1], reference[:1], bvh.UP, motion.fps)
    second = 100.0 * metrics.toe_slide(toes[1:], reference[1:], bvh.UP, motion.fps)
    assert first > 10.0  # not locked: it slides as in the input
    assert second < 1.0


def test_defective_raw_capture_gives_finite_sane_motion():
    skeleton, motion, rig = load("cmu_03_02")
    result = remove_foot_sliding(skeleton, motion, rig, bvh.UP)
    assert np.isfinite(result.motion.rot).all() and np.isfinite(result.motion.pos).all()
    _, gpos = forward_kinematics(skeleton, result.motion.rot, result.motion.pos)
    _, gpos0 = forward_kinematics(skeleton, motion.rot, motion.pos)
    assert np.linalg.norm(gpos - gpos0, axis=-1).max() < 0.3  # no wild pose


@pytest.mark.parametrize("degrees", [0.0, 0.5])
def test_every_reported_figure_is_the_same_in_any_unit(degrees):
    """The walk (clean, and jittered by 0.5 degrees a frame) in metres and in CMU units with
    their metres per unit: every figure before and after, and the input's jitter, agree. The
    ground figures once scaled their adult thresholds by metres instead of world units and
    read no foot on the ground in CMU units (6.6 cm/s in metres, 0.0 in CMU units)."""
    in_units = [load("cmu_07_01", scale=scale) for scale in (CMU_TO_METRES, 1.0)]
    results = [remove_foot_sliding(skeleton, jittered(motion, degrees, seed=1) if degrees else motion, rig, bvh.UP,
                                   unit_scale=unit_scale)
               for (skeleton, motion, rig), unit_scale in zip(in_units, (1.0, CMU_TO_METRES))]
    metres, cmu = results
    assert metres.before["grounded_share"] > 0.1
    for figures in ("before", "after"):
        for key, value in getattr(metres, figures).items():
            assert getattr(cmu, figures)[key] == pytest.approx(value, rel=1e-6, abs=1e-9), (figures, key)
    assert cmu.foot_jitter_mm == pytest.approx(metres.foot_jitter_mm, rel=1e-6)


@pytest.mark.parametrize("units, unit_scale, said", [
    ("m", 1.0, None), ("cm", 0.01, None), ("CMU unit", CMU_TO_METRES, None),
    ("CMU unit", 1.0, "large"), ("cm", 1.0, "large"), ("m", 0.01, "small"),
])
def test_figures_in_units_the_character_is_not_sized_in_are_warned_of(units, unit_scale, said):
    """A character read in other units than its scene says (a CMU clip imported at scale 1,
    a centimetre rig in a metre scene) is warned of, with its size; the fix is the same."""
    metres_per_unit = {"m": 1.0, "cm": 0.01, "CMU unit": CMU_TO_METRES}[units]
    skeleton, motion, rig = load("cmu_07_01", scale=CMU_TO_METRES / metres_per_unit)
    result = remove_foot_sliding(skeleton, motion, rig, bvh.UP, unit_scale=unit_scale)
    warned = [w for w in result.warnings if w.startswith("the legs measure")]
    if said is None:
        assert warned == []
        return
    (warning,) = warned
    metres = float(warning.split()[3])
    assert metres == pytest.approx(0.85 * unit_scale / metres_per_unit, rel=0.15)
    assert f"unless the character is that {said}" in warning and "Unit Scale" in warning
    metres_result = remove_foot_sliding(*load("cmu_07_01"), bvh.UP)
    assert np.allclose(result.contacts, metres_result.contacts)
    for figures in ("before", "after"):  # a share of frames reads the same, sized as the character is
        for key in ("skate_ratio", "skate_ratio_5f", "grounded_share"):
            assert getattr(result, figures)[key] == pytest.approx(getattr(metres_result, figures)[key]), (figures, key)


@pytest.mark.parametrize("frames", range(2, 9))
def test_a_clip_of_a_few_frames_is_solved(frames):
    """A clip as short as two frames (a cut-down shot, a pose pair) gives finite motion.
    Three frames once failed: each leg's knee direction (3 numbers) was taken for one value
    per frame."""
    skeleton, motion, rig = load("cmu_07_01")
    clip = type(motion)(motion.rot[100 : 100 + frames].copy(), motion.pos[100 : 100 + frames].copy(), motion.fps)
    result = remove_foot_sliding(skeleton, scale_root_motion(skeleton, clip, 1.25), rig, bvh.UP)
    assert result.motion.rot.shape == clip.rot.shape
    assert np.isfinite(result.motion.rot).all() and np.isfinite(result.motion.pos).all()


def test_a_long_clip_played_back_and_forth_stays_within_reach_with_the_pelvis_close():
    """Played forward and backward with its root x1.25, the walk's long stances lock the
    feet far from where the body passes: the reach must plant them nearer (the foot
    yields as a whole, its lock kept) as well as move the pelvis. The pelvis alone,
    re-linearised, wandered off by 0.8 m and left legs 5 cm overstretched."""
    skeleton, motion, rig = load("cmu_01_01")
    there_and_back = np.resize(np.r_[np.arange(motion.frames), np.arange(motion.frames - 2, 0, -1)], 3000)
    clip = type(motion)(motion.rot[there_and_back], motion.pos[there_and_back], motion.fps)
    sliding = scale_root_motion(skeleton, clip, 1.25)
    result = remove_foot_sliding(skeleton, sliding, rig, bvh.UP)
    assert result.reach_violation < WITHIN_REACH and result.lock_residual < PIN
    assert np.abs(result.motion.pos[:, rig.pelvis] - sliding.pos[:, rig.pelvis]).max() < 0.15


@pytest.mark.parametrize("name, fps, factor", [("cmu_131_01", 60, 1.25), ("cmu_131_03", 60, 1.25),
                                               ("cmu_131_02", 120, 1.0), ("cmu_07_01", 30, 0.75)])
def test_the_pelvis_moves_no_more_abruptly_than_the_input(name, fps, factor):
    """The pelvis keeps a leg within its reach where the planted foot pulls it too far,
    but never with a jolt: its sharpest acceleration stays within 1.5x the input's. Each
    frame of a stretched run held its leg at exactly its reach, pulling the pelvis where
    the leg would have been shorter and squeezing it between two planted legs: 2.6-3.8x
    the input's peak here, and on a walk starting from standing (another studio's) 22x,
    the pelvis thrown 9 cm in one frame."""
    skeleton, motion, rig = load(name)
    clip = scale_root_motion(skeleton, decimate(motion, fps), factor)
    result = remove_foot_sliding(skeleton, clip, rig, bvh.UP)
    peak = pelvis_acceleration_peak(skeleton, result.motion, rig)
    assert peak <= 1.5 * pelvis_acceleration_peak(skeleton, clip, rig)
    assert result.reach_violation < WITHIN_REACH


def test_a_leg_a_little_too_long_waits_for_the_pelvis_fix_of_one_far_too_long():
    """cmu_07_01 at 24 fps, its root slowed to x0.75, starts with the left foot swinging in
    48 mm beyond its leg's reach and the right 2 mm beyond: a reach term on each, a frame
    apart, squeezed the pelvis between them, which dropped 5.4 cm and swung 1.6 cm sideways
    within its first frame (3.1x the input's sharpest acceleration). The right leg's term
    now waits a round, by which the pelvis's fix for the left has shortened it. What is left
    is the pelvis's correction easing off from the first frames, which nothing before them
    can ease in."""
    skeleton, motion, rig = load("cmu_07_01")
    clip = scale_root_motion(skeleton, decimate(motion, 24), 0.75)
    result = remove_foot_sliding(skeleton, clip, rig, bvh.UP)
    assert pelvis_acceleration_peak(skeleton, result.motion, rig) <= 2.0 * pelvis_acceleration_peak(skeleton, clip, rig)
    assert result.reach_violation < WITHIN_REACH



def knee_flicker(skeleton, motion, rig):
    """Over both legs: the knees' p99 acceleration (m/s^2), and how many frames the knee's
    angle turns back by more than 5 degrees right after changing by as much (a one-frame pop)."""
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    accelerations, pops = [], 0
    for leg in rig.legs:
        thigh, shin = gpos[:, leg.hip] - gpos[:, leg.knee], gpos[:, leg.ankle] - gpos[:, leg.knee]
        angle = np.degrees(np.arctan2(np.linalg.norm(np.cross(thigh, shin), axis=1), np.sum(thigh * shin, axis=1)))
        turn = np.diff(angle)
        pops += int(np.sum((turn[:-1] * turn[1:] < 0) & (np.minimum(abs(turn[:-1]), abs(turn[1:])) > 5.0)))
        accelerations.append(np.linalg.norm(np.diff(gpos[:, leg.knee], 2, axis=0), axis=1) * motion.fps**2)
    return float(np.percentile(np.concatenate(accelerations), 99)), pops


# Degrees a foot planted at heel and ball may lag the input's swivel: its free turn and the turn over
# which the sweeping point lets go.
FOLLOWED_WITHIN = swivels.SWIVEL_FREE_TURN + swivels.SWIVEL_EASE_TURN


def foot_headings(skeleton, motion, rig):
    """Each foot's heading about bvh.UP (y), degrees (L, F), and the world heels and balls (L, F, 3)."""
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    heels, balls = (np.stack([gpos[:, getattr(leg, point)] for leg in rig.legs]) for point in ("ankle", "toe"))
    foot = balls - heels
    return np.degrees(np.arctan2(foot[..., 0], foot[..., 2])), heels, balls


def heading_lag(result, skeleton, motion, rig):
    """Degrees (L, F) the result's feet point away from the input's."""
    turn = foot_headings(skeleton, result.motion, rig)[0] - foot_headings(skeleton, motion, rig)[0]
    return np.abs((turn + 180.0) % 360.0 - 180.0)


def swivelled_walk(about, degrees, fps=30, shape=lambda t: t * t * (3.0 - 2.0 * t)):
    """cmu_07_01 at ``fps`` with its body turned about the left foot's ``about`` point ("toe":
    the ball, "ankle": the heel) over that foot's first stance on heel and ball, by ``degrees``
    times ``shape`` of the time through the stance (0..1; a smoothstep: the whole turn by its
    end), and that stance's frames: the foot swivels on the spot."""
    skeleton, motion, rig = load("cmu_07_01")
    motion = decimate(motion, fps) if fps != motion.fps else motion
    labels = remove_foot_sliding(skeleton, motion, rig, bvh.UP)
    both = (labels.contacts[0] >= 1.0) & (labels.heel_contacts[0] >= 1.0)
    start = int(np.argmax(both))
    end = start + int(np.argmin(both[start:]))
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    pivot = gpos[(start + end) // 2, getattr(rig.legs[0], about)]
    ramp = np.clip((np.arange(motion.frames) - start) / (end - start), 0.0, 1.0)
    half = 0.5 * np.radians(degrees) * shape(ramp)
    turn = np.stack([np.cos(half), np.zeros_like(half), np.sin(half), np.zeros_like(half)], axis=-1)  # about y
    rot, pos = motion.rot.copy(), motion.pos.copy()
    rot[:, rig.pelvis] = quaternion.multiply(turn, rot[:, rig.pelvis])
    pos[:, rig.pelvis] = pivot + quaternion.rotate(turn, pos[:, rig.pelvis] - pivot)
    return skeleton, Motion(rot, pos, motion.fps), rig, slice(start, end)


def travel(points, frames):
    """How far (m) points (F, 3) get from where they are on the first of ``frames``."""
    return float(np.linalg.norm(points[frames] - points[frames.start], axis=-1).max())


@pytest.mark.parametrize("about, degrees, held, swept", [("toe", 90.0, 0, 1), ("toe", -90.0, 0, 1),
                                                          ("ankle", 45.0, 1, 0), ("ankle", -45.0, 1, 0)])
def test_a_foot_swivelled_on_the_spot_turns_about_the_point_that_stays(about, degrees, held, swept):
    """The walk's body turned about the left ball (90 degrees) or heel (45) over the left
    foot's flat stance, heel and ball both labelled at first: the foot was held pointing the
    way it landed, 84-90 / 42-45 degrees off the input's by the end. The label of the point
    that sweeps (the heel on the ball, the ball on the heel) lets go past the free turn, so
    the foot turns with the input about the point that stays, held; the curves say so."""
    skeleton, swivelled, rig, stance = swivelled_walk(about, degrees)
    result = remove_foot_sliding(skeleton, swivelled, rig, bvh.UP)
    assert heading_lag(result, skeleton, swivelled, rig)[0, stance].max() < FOLLOWED_WITHIN
    labels = np.stack((result.contacts[0], result.heel_contacts[0]))[:, stance]  # toe, heel
    assert labels[held].min() >= 1.0 and labels[swept, -1] == 0.0
    points = foot_headings(skeleton, result.motion, rig)[1:]  # heels, balls
    assert travel(points[1 - held][0], stance) < 1e-3 and travel(points[1 - swept][0], stance) > 0.04


def test_a_point_a_swivel_let_go_stays_free_through_the_stance_and_lands_again_gently():
    """A swivel on the ball that turns 40 degrees and back within the stance: the heel, once let
    go, stays free while the stance lasts, so the foot follows the input back (held again as the
    turn came back, it stood 20 degrees off at the stance's end and whipped round at lift-off).
    A swivel on the heel: the ball let go lands again gently as the heel lifts (at once, it
    stopped dead from 0.5 m/s in a frame)."""
    skeleton, swivelled, rig, stance = swivelled_walk("toe", 40.0, fps=120, shape=lambda t: np.sin(np.pi * t) ** 2)
    result = remove_foot_sliding(skeleton, swivelled, rig, bvh.UP)
    heel = result.heel_contacts[0, stance]
    assert heel.min() == 0.0 and (np.diff(heel[np.argmax(heel < 1.0):]) <= 0.0).all()  # let go, never back
    assert heading_lag(result, skeleton, swivelled, rig)[0, stance.stop - 1] < 2.0
    skeleton, swivelled, rig, stance = swivelled_walk("ankle", 45.0, fps=120)
    result = remove_foot_sliding(skeleton, swivelled, rig, bvh.UP)
    ball = result.contacts[0, stance.stop:stance.stop + 12]
    assert ball[0] < 0.1 and (np.diff(ball) > 0.0).all() and (np.diff(ball) < 0.2).all()  # eased back in
    balls = foot_headings(skeleton, result.motion, rig)[2][0]
    speed = np.linalg.norm(np.diff(balls, axis=0), axis=-1) * 120.0
    around = speed[stance.stop - 3:stance.stop + 12]
    assert not ((around[:-1] > 0.2) & (around[1:] < 0.01)).any()  # no dead stop


def test_a_foot_turning_with_both_points_sliding_alike_keeps_both_labels():
    """cmu_131_03's left foot turns 33 degrees over a stance on heel and ball (frames 648-720)
    with both points creeping alike (the heel at 0.04-0.17 m/s, the ball at 0.04-0.25): the
    input shows no point it turns about, so both hold as labelled (letting the heel go swung
    it 5 cm round in 0.15 s to catch up the turn). A walking foot, whose heading drifts a
    degree or two over a stance (cmu_07_01), keeps both too."""
    for name in ("cmu_131_03", "cmu_07_01"):
        skeleton, motion, rig = load(name)
        result = remove_foot_sliding(skeleton, motion, rig, bvh.UP)
        assert np.isin(np.stack((result.contacts, result.heel_contacts)), (0.0, 1.0)).all()  # none eased out
        heels = joint_paths(skeleton, result.motion, rig, "ankle")
        assert steps_while(heels, result.heel_contacts).max() < PIN


def test_contacts_an_animator_keyed_hold_through_a_swivel():
    """Keyed contacts are obeyed as keyed: where an animator keyed heel and ball planted
    through the swivel, both hold (the foot keeps the heading it landed with)."""
    skeleton, swivelled, rig, stance = swivelled_walk("toe", 90.0)
    labels = remove_foot_sliding(skeleton, swivelled, rig, bvh.UP)
    keyed = np.stack((labels.contacts, labels.heel_contacts))
    keyed[:, 0, stance] = 1.0
    result = remove_foot_sliding(skeleton, swivelled, rig, bvh.UP, contacts=keyed[0], heel_contacts=keyed[1])
    assert np.array_equal(result.heel_contacts, keyed[1]) and np.array_equal(result.contacts, keyed[0])
    points = foot_headings(skeleton, result.motion, rig)[1:]
    assert max(travel(point[0], stance) for point in points) < 1e-3


@pytest.mark.parametrize("name, fps, factor", [("cmu_07_01", 30, 1.0), ("cmu_03_01", 120, 1.25)])
def test_a_knee_straight_in_the_input_does_not_pop(name, fps, factor):
    """Where the input leg is straight, a millimetre of hip-to-heel length is degrees of knee:
    the solve's lengths wandered by millimetres frame to frame (capture noise of the pelvis
    the locked foot does not follow, one frame of a stretched run held at its reach), and
    the knee popped straight for single frames between bent ones: cmu_07_01 at 30 fps went
    165 -> 180 -> 172 -> 180 -> 166 degrees, five such pops over the clip where the input has
    none; cmu_03_01 at 120 fps, root x1.25, had the knees' p99 acceleration 2.7x the input's."""
    skeleton, motion, rig = load(name)
    clip = scale_root_motion(skeleton, decimate(motion, fps), factor)
    result = remove_foot_sliding(skeleton, clip, rig, bvh.UP)
    before, after = knee_flicker(skeleton, clip, rig), knee_flicker(skeleton, result.motion, rig)
    assert after[1] <= before[1]
    assert after[0] <= 1.5 * before[0]

def test_tridiagonal_solver_solves_each_row_of_a_batch_as_numpy_does():
    """Independent systems of the offline lock's shape: the stiff ones of a lock (weights
    up to 1e6 beside anchors of 1e-3) and soft ones, odd and even frame counts."""
    rng = np.random.default_rng(3)
    for frames in (1, 2, 3, 4, 5, 8, 37, 318):
        steps = np.geomspace(1e-2, 1e6, 4)[:, None] * rng.random((4, frames))
        anchors = np.geomspace(1e-3, 1e2, 4)[::-1, None] * rng.random((4, frames))
        lower = np.zeros((4, frames))
        lower[:, 1:] = -steps[:, 1:]
        diag = anchors + steps + np.concatenate((steps[:, 1:], np.zeros((4, 1))), axis=1)
        rhs = rng.normal(size=(4, frames))
        x = solve_tridiagonal(diag, lower, rhs)
        for row in range(4):
            dense = np.diag(diag[row]) + np.diag(lower[row, 1:], -1) + np.diag(lower[row, 1:], 1)
            expected = np.linalg.solve(dense, rhs[row])
            assert np.allclose(x[row], expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())


def test_block_tridiagonal_solver_matches_dense_solve():
    rng = np.random.default_rng(0)
    for frames in (1, 2, 3, 8, 37):
        m = 6
        diag = rng.normal(size=(frames, m, m))
        diag = diag @ np.swapaxes(diag, -1, -2) + 10 * np.eye(m)
        lower = rng.normal(size=(frames, m, m))
        rhs = rng.normal(size=(frames, m))
        dense = np.zeros((frames * m, frames * m))
        for i in range(frames):
            dense[i * m:(i + 1) * m, i * m:(i + 1) * m] = diag[i]
            if i:
                dense[i * m:(i + 1) * m, (i - 1) * m:i * m] = lower[i]
                dense[(i - 1) * m:i * m, i * m:(i + 1) * m] = lower[i].T
        x = solve_block_tridiagonal(diag, lower, rhs)
        assert np.allclose(dense @ x.ravel(), rhs.ravel(), atol=1e-9)
        several = rng.normal(size=(frames, m, 3))  # three right-hand sides at once
        x = solve_block_tridiagonal(diag, lower, several)
        assert np.allclose(dense @ x.reshape(-1, 3), several.reshape(-1, 3), atol=1e-9)



def test_block_tridiagonal_solver_with_diagonal_coupling_blocks_matches_dense_solve():
    rng = np.random.default_rng(1)
    for frames in (1, 2, 3, 4, 8, 37):  # odd and even counts take different ends
        m = 6
        diag = rng.normal(size=(frames, m, m))
        diag = diag @ np.swapaxes(diag, -1, -2) + 10 * np.eye(m)
        lower = rng.normal(size=(frames, m))  # the diagonals of the blocks A[i, i - 1]
        rhs = rng.normal(size=(frames, m, 2))
        dense = np.zeros((frames * m, frames * m))
        for i in range(frames):
            dense[i * m:(i + 1) * m, i * m:(i + 1) * m] = diag[i]
            if i:
                dense[i * m:(i + 1) * m, (i - 1) * m:i * m] = np.diag(lower[i])
                dense[(i - 1) * m:i * m, i * m:(i + 1) * m] = np.diag(lower[i])
        x = solve_block_tridiagonal(diag, lower, rhs)
        assert np.allclose(dense @ x.reshape(-1, 2), rhs.reshape(-1, 2), atol=1e-9)
        assert np.allclose(solve_block_tridiagonal(diag, lower, rhs[..., 0]), x[..., 0], atol=1e-12)


def test_mostly_separable_solver_matches_dense_solve_wherever_the_dense_frames_are():
    """Independent stiff and soft chains plus dense terms on a few frames, as the reach adds
    them: at either end, in runs, alone, on every frame, on one frame; one stretch between
    dense frames as short as one frame."""
    rng = np.random.default_rng(4)
    m, frames = 9, 23
    for dense_frames in ([0], [22], [5], [0, 1, 2], [20, 21, 22], [3, 5, 6, 7, 15, 17], list(range(frames)),
                         [0, 22], sorted(rng.choice(frames, 9, replace=False))):
        dense_frames = np.asarray(dense_frames)
        steps = np.geomspace(1e-2, 1e6, m)[:, None] * rng.random((m, frames))
        lower = np.zeros((m, frames))
        lower[:, 1:] = -steps[:, 1:]
        diag = 1e-3 + steps + np.concatenate((steps[:, 1:], np.zeros((m, 1))), axis=1)
        rhs = rng.normal(size=(m, frames))
        vectors = rng.normal(size=(len(dense_frames), m, 2))
        blocks = 1e4 * vectors @ np.swapaxes(vectors, -1, -2)  # rank 2, as two legs' reach
        pulls = rng.normal(size=(len(dense_frames), m))
        dense = np.zeros((frames * m, frames * m))
        for i in range(frames):
            dense[i * m:(i + 1) * m, i * m:(i + 1) * m] = np.diag(diag[:, i])
            if i:
                dense[i * m:(i + 1) * m, (i - 1) * m:i * m] = np.diag(lower[:, i])
                dense[(i - 1) * m:i * m, i * m:(i + 1) * m] = np.diag(lower[:, i])
        full_rhs = rhs.T.copy()
        for block, pull, i in zip(blocks, pulls, dense_frames):
            dense[i * m:(i + 1) * m, i * m:(i + 1) * m] += block
            full_rhs[i] += pull
        expected = np.linalg.solve(dense, full_rhs.ravel()).reshape(frames, m)
        x = solve_mostly_separable(diag, lower, rhs, dense_frames, vectors.transpose(2, 1, 0),
                                   np.full((2, len(dense_frames)), 1e4), pulls.T)
        assert np.allclose(x, expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())


def _chains(rng, count, frames, stiffness=(1e-2, 1e6), anchor=1e-3):
    """A batch of SPD tridiagonal chains with negative couplings, soft to stiff, as the
    offline lock's: (diag, lower) as solve_tridiagonal takes them, and the dense matrices."""
    steps = np.geomspace(*stiffness, count)[:, None] * (0.5 + rng.random((count, frames)))
    lower = np.zeros((count, frames))
    lower[:, 1:] = -steps[:, 1:]
    diag = anchor + steps + np.concatenate((steps[:, 1:], np.zeros((count, 1))), axis=1)
    dense = np.zeros((count, frames, frames))
    index = np.arange(frames)
    dense[:, index, index] = diag
    dense[:, index[1:], index[:-1]] = dense[:, index[:-1], index[1:]] = lower[:, 1:]
    return diag, lower, dense


def _chain_inverse(diag, lower):
    unit = np.zeros((2,) + diag.shape)
    unit[0, :, 0] = unit[1, :, -1] = 1.0
    return ChainInverse.of_ends(solve_tridiagonal(diag, lower, unit))


def test_chain_inverse_gives_every_entry_to_its_precision_even_the_smallest():
    """The product of the first and last columns gives each entry of the inverse, those
    thirty decades below the diagonal as precisely as the diagonal (relative), where a
    difference of two solves would have lost them."""
    rng = np.random.default_rng(5)
    diag, lower, dense = _chains(rng, 4, 60, stiffness=(1e-1, 1e3), anchor=30.0)
    inverse = _chain_inverse(diag, lower)
    reference = np.linalg.inv(dense)
    # Each chain alone: one-hot vectors on it at every frame give its whole inverse.
    entries = np.stack([inverse.coupling(inverse.ends_at(np.arange(60)), np.eye(4)[[chain] * 60]) for chain in range(4)])
    assert reference.min() < 1e-30 * reference.max()
    assert np.abs(entries / reference - 1.0).max() < 1e-11


def test_low_rank_update_matches_dense_solve_wherever_its_terms_are():
    """Terms coupling a pelvis's three chains with one foot's at a frame, as the reach adds
    them: two on one frame (both legs), at either end, a frame apart, far apart, and
    stiff (1e4 against chains of 1e-2 to 1e6)."""
    rng = np.random.default_rng(6)
    count, frames = 9, 40
    diag, lower, dense = _chains(rng, count, frames)
    inverse = _chain_inverse(diag, lower)
    rhs = rng.normal(size=(count, frames))
    unreached = solve_tridiagonal(diag, lower, rhs)
    for term_frames, legs in (([0], [0]), ([39], [1]), ([7, 7], [0, 1]), ([0, 1, 2, 20, 38, 39], [0, 1, 0, 1, 1, 0]),
                              ([3, 5, 5, 30], [1, 0, 1, 0])):
        term_frames, legs = np.asarray(term_frames), np.asarray(legs)
        rows = np.concatenate((np.broadcast_to(np.arange(3), (len(legs), 3)), 3 * (1 + legs)[:, None] + np.arange(3)),
                              axis=1)
        across = rng.normal(size=(len(legs), 3))
        vectors = np.concatenate((across, -across), axis=1)
        weights, goals = 1e4 * (0.5 + rng.random(len(legs))), rng.normal(size=len(legs))
        full = np.zeros((count * frames, count * frames))
        for chain in range(count):
            full[chain * frames:(chain + 1) * frames, chain * frames:(chain + 1) * frames] = dense[chain]
        full_rhs = rhs.ravel().copy()
        for row, vector, weight, goal, frame in zip(rows, vectors, weights, goals, term_frames):
            u = np.zeros(count * frames)
            u[row * frames + frame] = vector
            full += weight * np.outer(u, u)
            full_rhs += weight * goal * u
        expected = np.linalg.solve(full, full_rhs).reshape(count, frames)
        x = solve_low_rank_update(inverse, unreached, term_frames, rows, vectors, weights, goals)
        assert np.allclose(x, expected, rtol=1e-8, atol=1e-9 * np.abs(expected).max())


def test_chain_inverse_is_not_trusted_where_its_corner_leaves_the_range():
    """A long stiff chain's response to its first frame vanishes below the floating-point
    range before its last: the product form would lose entries, and says so."""
    diag, lower, _ = _chains(np.random.default_rng(7), 2, 900, stiffness=(1.0, 2.0), anchor=1.0)
    assert _chain_inverse(diag, lower) is None
    assert _chain_inverse(diag[:, :200], lower[:, :200]) is not None


def test_the_reach_rounds_solve_alike_by_low_rank_update_and_by_reduction(monkeypatch):
    """cmu_07_01 needs reach terms (its feet, held at mid-stance, end up 2 cm past the legs'
    reach): solved as a low-rank update of the solve without them, and as the reduction at
    their frames a clip longer than the product form's range takes, the result is the same."""
    skeleton, motion, rig = load("cmu_07_01")
    updates = []
    update = offline_lock.solve_low_rank_update
    monkeypatch.setattr(offline_lock, "solve_low_rank_update", lambda *args: updates.append(1) or update(*args))
    by_update = remove_foot_sliding(skeleton, motion, rig, bvh.UP)
    monkeypatch.setattr(banded, "PRODUCT_FORM_RANGE", 1.0)  # no corner is within it: every round reduces
    by_reduction = remove_foot_sliding(skeleton, motion, rig, bvh.UP)
    assert len(updates) >= 2
    assert by_update.reach_violation < WITHIN_REACH and by_reduction.reach_violation < WITHIN_REACH
    assert np.abs(by_update.motion.rot - by_reduction.motion.rot).max() < 1e-8
    assert np.abs(by_update.motion.pos - by_reduction.motion.pos).max() < 1e-10


def test_spd_inverse_of_few_and_of_many_blocks_matches_numpy():
    """Few blocks take the bordered factorisation, many the row-by-row triangle: both
    invert the stiff blocks of the normal equations (weights 1e-4 to 1e4) alike."""
    rng = np.random.default_rng(2)
    for count in (1, 3, BORDERED_BLOCKS, BORDERED_BLOCKS + 1, 3 * BORDERED_BLOCKS):
        vectors = rng.normal(size=(count, 9, 3))
        blocks = vectors @ np.swapaxes(vectors, -1, -2) + np.diag(np.geomspace(1e-4, 1e4, 9))
        inverse, reference = spd_inverse(blocks), np.linalg.inv(blocks)
        scale = np.abs(reference).max(axis=(1, 2))[:, None, None]
        assert (np.abs(inverse - reference) <= 1e-11 * scale).all()
        assert np.abs(inverse @ blocks - np.eye(9)).max() < 1e-11

class TestBadInput:
    def setup_method(self):
        self.skeleton, self.motion, self.rig = load("cmu_07_01")

    def test_nan_positions_are_rejected_by_name(self):
        self.motion.pos[10, 3, 1] = np.nan
        with pytest.raises(SolverInputError, match="not a number at frame index 10"):
            remove_foot_sliding(self.skeleton, self.motion, self.rig, bvh.UP)

    def test_one_frame_clip_is_rejected(self):
        self.motion.rot, self.motion.pos = self.motion.rot[:1], self.motion.pos[:1]
        with pytest.raises(SolverInputError, match="1 frame"):
            remove_foot_sliding(self.skeleton, self.motion, self.rig, bvh.UP)

    def test_zero_length_bones_are_rejected(self):
        shin = self.rig.legs[0].knee
        self.motion.pos[:, self.rig.legs[0].ankle] = 0.0  # ankle on the knee
        with pytest.raises(SolverInputError, match="zero length"):
            remove_foot_sliding(self.skeleton, self.motion, self.rig, bvh.UP)
        assert shin != self.rig.legs[0].ankle

    def test_no_contacts_leaves_the_motion_alone(self):
        none = np.zeros((len(self.rig.legs), self.motion.frames))
        result = remove_foot_sliding(self.skeleton, self.motion, self.rig, bvh.UP, contacts=none, heel_contacts=none)
        assert result.warnings
        _, gpos = forward_kinematics(self.skeleton, result.motion.rot, result.motion.pos)
        _, gpos0 = forward_kinematics(self.skeleton, self.motion.rot, self.motion.pos)
        assert np.abs(gpos - gpos0).max() < 1e-3

    def test_contacts_everywhere_give_finite_motion(self):
        every = np.ones((len(self.rig.legs), self.motion.frames))
        result = remove_foot_sliding(self.skeleton, self.motion, self.rig, bvh.UP, contacts=every)
        assert np.isfinite(result.motion.rot).all() and np.isfinite(result.motion.pos).all()

    def test_a_leg_without_contacts_is_labelled_but_a_broken_curve_is_rejected(self):
        contacts = np.zeros((len(self.rig.legs), self.motion.frames))
        contacts[1] = np.nan  # no curve for this leg: label it
        result = remove_foot_sliding(self.skeleton, self.motion, self.rig, bvh.UP, contacts=contacts)
        assert not result.contacts[0].any() and result.contacts[1].any()
        contacts[1, :10] = 1.0  # a curve with holes is not "no curve"
        with pytest.raises(SolverInputError, match="not numbers"):
            remove_foot_sliding(self.skeleton, self.motion, self.rig, bvh.UP, contacts=contacts)

    def test_contacts_of_the_wrong_shape_are_rejected(self):
        with pytest.raises(SolverInputError, match="contacts must be"):
            remove_foot_sliding(self.skeleton, self.motion, self.rig, bvh.UP, contacts=np.ones(3))


def test_same_motion_at_half_the_frame_rate_gives_the_same_result():
    skeleton, motion, rig = load("cmu_07_01")
    sliding = scale_root_motion(skeleton, motion, 1.25)
    half = type(sliding)(sliding.rot[::2].copy(), sliding.pos[::2].copy(), sliding.fps / 2)
    full_rate = remove_foot_sliding(skeleton, sliding, rig, bvh.UP)
    half_rate = remove_foot_sliding(skeleton, half, rig, bvh.UP)
    assert np.mean((full_rate.contacts[:, ::2] > 0.5) == (half_rate.contacts > 0.5)) > 0.95
    _, expected = forward_kinematics(skeleton, full_rate.motion.rot[::2], full_rate.motion.pos[::2])
    _, got = forward_kinematics(skeleton, half_rate.motion.rot, half_rate.motion.pos)
    toes = [leg.toe for leg in rig.legs]
    assert np.linalg.norm(got[:, toes] - expected[:, toes], axis=-1).mean() < 0.01
    assert np.linalg.norm(got[:, rig.pelvis] - expected[:, rig.pelvis], axis=-1).mean() < 0.01
    assert half_rate.after["toe_slide_cm_s"] < 1.0


def test_four_legs_are_locked_together():
    skeleton, motion, rig = with_front_legs(*load("cmu_07_01"))
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    hind, front = rig.legs[0], rig.legs[2]
    assert np.allclose(gpos[:, front.toe] - gpos[:, hind.toe], [0.0, 0.0, 0.9], atol=1e-9)
    reference = reference_labels(skeleton, motion, rig)
    sliding = scale_root_motion(skeleton, motion, 1.25)
    result = remove_foot_sliding(skeleton, sliding, rig, bvh.UP)
    assert result.contacts.shape == (4, motion.frames)
    assert f1_score(result.contacts, reference) >= 0.9
    toes = toe_positions(skeleton, result.motion, rig)
    for leg in range(4):
        assert 100.0 * metrics.toe_slide(toes[leg:leg + 1], reference[leg:leg + 1], bvh.UP, motion.fps) < 1.0
    # Four planted legs hold the pelvis between them: it moves further than a biped's (the
    # issue's bound for a walk at x1.25), and no more abruptly than the input's.
    assert result.after["pelvis_deviation_cm"] < 5.0
    assert pelvis_acceleration_peak(skeleton, result.motion, rig) <= 1.5 * pelvis_acceleration_peak(skeleton, sliding, rig)


def joint_paths(skeleton, motion, rig, role):
    """(L, F, 3) world positions of one joint of every leg ("ankle" is the heel pivot)."""
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    return np.stack([gpos[:, getattr(leg, role)] for leg in rig.legs])


def steps_while(points, weights):
    """Steps (m) of (L, F, 3) points between two frames that both have weight 1."""
    both = (weights[:, 1:] >= 1.0) & (weights[:, :-1] >= 1.0)
    return np.linalg.norm(np.diff(points, axis=1), axis=-1)[both]


@pytest.fixture(scope="module", params=[("cmu_07_01", 1.25), ("cmu_07_01", 0.75), ("cmu_131_01", 1.25)])
def pinned_walk(request):
    name, factor = request.param
    skeleton, motion, rig = load(name)
    sliding = scale_root_motion(skeleton, motion, factor)
    result = remove_foot_sliding(skeleton, sliding, rig, bvh.UP)
    return skeleton, motion, sliding, rig, result


def test_heel_and_ball_each_hold_while_pinned(pinned_walk):
    skeleton, _, _, rig, result = pinned_walk
    heels = joint_paths(skeleton, result.motion, rig, "ankle")
    balls = joint_paths(skeleton, result.motion, rig, "toe")
    heel_steps, ball_steps = steps_while(heels, result.heel_contacts), steps_while(balls, result.contacts)
    assert len(heel_steps) > 100 and len(ball_steps) > 100
    assert heel_steps.max() < PIN and ball_steps.max() < PIN


def test_the_foot_rolls_about_the_pinned_point(pinned_walk):
    """Heel pinned alone (heel strike): the heel holds and the foot turns about it as the
    source foot turns; ball pinned alone (push-off): the ball holds and the heel rises."""
    skeleton, _, sliding, rig, result = pinned_walk
    heels = joint_paths(skeleton, result.motion, rig, "ankle")
    balls = joint_paths(skeleton, result.motion, rig, "toe")
    source_heels = joint_paths(skeleton, sliding, rig, "ankle")
    source_balls = joint_paths(skeleton, sliding, rig, "toe")
    heel_only = result.heel_contacts * (1.0 - result.contacts)
    toe_only = result.contacts * (1.0 - result.heel_contacts)
    assert steps_while(heels, heel_only).max() < PIN
    turn = steps_while(balls - heels, heel_only)  # how far the ball swings about the heel per frame
    source_turn = steps_while(source_balls - source_heels, heel_only)
    assert source_turn.mean() > 10 * PIN and abs(turn.mean() - source_turn.mean()) < 0.2 * source_turn.mean()
    assert steps_while(balls, toe_only).max() < PIN
    turn = steps_while(heels - balls, toe_only)  # how far the heel swings about the ball per frame
    source_turn = steps_while(source_heels - source_balls, toe_only)
    # A heel released after the flat foot eases back onto the source's roll: a little faster.
    assert source_turn.mean() > 10 * PIN and abs(turn.mean() - source_turn.mean()) < 0.35 * source_turn.mean()


def test_heel_pins_add_no_pops(pinned_walk):
    _, _, _, _, result = pinned_walk
    assert result.after["ankle_accel_p99"] <= 1.5 * result.before["ankle_accel_p99"]


@pytest.mark.parametrize("name", ["cmu_07_01", "cmu_131_01"])
def test_walk_at_125_slides_under_half_a_cm_per_second_over_its_contacts(name):
    skeleton, motion, rig = load(name)
    reference = reference_labels(skeleton, motion, rig)
    sliding = scale_root_motion(skeleton, motion, 1.25)
    result = remove_foot_sliding(skeleton, sliding, rig, bvh.UP)
    assert slide_cm_s(skeleton, sliding, rig, reference) > 10.0
    assert slide_cm_s(skeleton, result.motion, rig, reference) <= 0.5


def test_a_rig_without_toe_bones_pins_its_one_point():
    skeleton, motion, rig = load("cmu_07_01")
    toeless = Rig(rig.pelvis, [Leg(leg.name, leg.hip, leg.knee, leg.ankle, leg.toe) for leg in rig.legs])
    sliding = scale_root_motion(skeleton, motion, 1.25)
    result = remove_foot_sliding(skeleton, sliding, toeless, bvh.UP,
                                 heel_contacts=np.ones((2, motion.frames)))  # a stray heel curve: ignored
    assert not result.heel_contacts.any()
    assert steps_while(joint_paths(skeleton, result.motion, toeless, "toe"), result.contacts).max() < PIN


@pytest.mark.parametrize("fps", [30, 120])
@pytest.mark.parametrize("name", ["cmu_131_01", "cmu_131_03"])
def test_a_fix_does_not_make_the_clip_skate_more(name, fps):
    """Issue 10's lock edges on a plain walk and the hop, as captured and decimated: the
    share of frames a toe near the ground moves faster than 0.5 m/s does not rise (it did,
    7.3% -> 9.7% on the walk, as released toes rushed along the ground, a released heel
    snapped the ball a few centimetres in a frame, and a kept height correction had the
    swing skim lower). A swing the fix leaves as it was may still move a millimetre (the
    pelvis moved): at a threshold's edge one frame turns either way, so one frame more is
    no rise (the walk at 30 fps, for its actor's size: 22 -> 23 frames of 248, the toes
    4.8 -> 4.7 cm up at 0.74 m/s)."""
    skeleton, motion, rig = load(name)
    result = remove_foot_sliding(skeleton, decimate(motion, fps), rig, bvh.UP)
    one_frame = 1.0 / (result.motion.frames - 1)
    assert result.before["skate_ratio"] > 0.05  # the clip skates a little as captured
    assert result.after["skate_ratio"] <= result.before["skate_ratio"] + one_frame
    assert result.after["skate_ratio_5f"] <= result.before["skate_ratio_5f"] + one_frame


@pytest.mark.parametrize("fps", [60, 120])
@pytest.mark.parametrize("name", ["cmu_07_01", "cmu_03_01"])
def test_no_break_shorter_than_fill_gaps_is_left_in_a_walks_contacts(name, fps):
    """Fill Gaps closes breaks shorter than it in the contacts the solve locks, heel and toe:
    a break made after it (a heel lifting a few millimetres inside its contact, a stance's
    edges moved out onto a short break) unlocked a foot for a moment and locked it again a
    centimetre off (cmu_131_02's left toe at frames 212-216: 0.7 cm in the input, 1.4 cm
    fixed; cmu_03_01's left heel, four one-frame breaks)."""
    skeleton, motion, rig = load(name)
    result = remove_foot_sliding(skeleton, scale_root_motion(skeleton, decimate(motion, fps), 1.25), rig, bvh.UP)
    shortest = int(np.floor(ContactSettings().min_gap * fps + 1e-6))
    toes, heels = result.contacts > 0.5, result.heel_contacts > 0.5
    for locked, holding in ((toes, heels), (heels, np.zeros_like(heels))):
        breaks = fill_gaps(locked, shortest) & ~locked & ~holding  # (a toe lifting while its heel holds the foot)
        assert not breaks.any(), np.argwhere(breaks)


def test_a_stance_edge_moved_out_onto_a_short_break_closes_it():
    """cmu_131_02's left toe breaks for 7 frames at 120 fps (58 ms, longer than Fill Gaps);
    its contacts' edges moving out a frame each left 5 (42 ms): it is closed."""
    skeleton, motion, rig = load("cmu_131_02")
    assert (remove_foot_sliding(skeleton, motion, rig, bvh.UP).contacts[0, 210:219] > 0.5).all()


@pytest.mark.parametrize("glitch", [0, 150])
def test_one_frame_sunk_below_the_floor_does_not_move_the_skate_ratio(glitch):
    """The skate ratio's ground is where the toes rest, not their lowest frame: a capture's
    frame a few cm down (cmu_07_01's first is) would sink it under every toe and hide every
    skate (20% read 0%)."""
    skeleton, motion, rig = load("cmu_131_01")
    sliding = scale_root_motion(skeleton, motion, 1.25)
    sunk = type(sliding)(sliding.rot.copy(), sliding.pos.copy(), sliding.fps, dict(sliding.meta))
    sunk.pos[glitch, 0] -= 0.06 * np.asarray(bvh.UP)  # the whole body 6 cm down on one frame
    clean, dropped = (remove_foot_sliding(skeleton, m, rig, bvh.UP) for m in (sliding, sunk))
    for state in ("before", "after"):
        ratios = [getattr(result, state)["skate_ratio"] for result in (clean, dropped)]
        assert ratios[0] > 0.05 and abs(ratios[1] - ratios[0]) < 0.01, (state, ratios)


def test_a_heel_outpacing_its_ball_is_not_pinned_alone():
    """The hop pivots on its forefoot: its heel, labelled planted (its vertical cue says so)
    while the ball is free, moves over 1 m/s. Pinned alone it would sweep the ball along
    the ground; the solve leaves it free, and the heel pins that remain hold."""
    skeleton, motion, rig = load("cmu_131_03")
    result = remove_foot_sliding(skeleton, motion, rig, bvh.UP)
    heels = joint_paths(skeleton, motion, rig, "ankle")
    speed = np.linalg.norm(np.gradient(heels, axis=1), axis=-1) * motion.fps
    alone = (result.heel_contacts > 0.5) & (result.contacts < 0.5)
    assert alone.any() and speed[alone].max() < 1.0  # m/s
    assert steps_while(joint_paths(skeleton, result.motion, rig, "ankle"), result.heel_contacts).max() < PIN


def test_a_clip_that_jumps_back_is_locked_as_its_pieces_are_alone():
    """A walk played twice in a row (its pelvis jumps back, as an NLA repeat's): with the
    jump given as a cut, each half is locked exactly as the walk alone is."""
    skeleton, motion, rig = load("cmu_131_01")
    sliding = scale_root_motion(skeleton, motion, 1.25)
    heels, toes, _ = label_foot_contacts(skeleton, sliding, rig, bvh.UP)
    alone = remove_foot_sliding(skeleton, sliding, rig, bvh.UP, contacts=toes, heel_contacts=heels)
    twice = type(sliding)(np.concatenate([sliding.rot] * 2), np.concatenate([sliding.pos] * 2), sliding.fps,
                          dict(sliding.meta))
    both = remove_foot_sliding(skeleton, twice, rig, bvh.UP, contacts=np.tile(toes, 2), heel_contacts=np.tile(heels, 2),
                               cuts=[motion.frames])
    for got, expected in ((both.motion.rot, alone.motion.rot), (both.motion.pos, alone.motion.pos)):
        assert np.abs(got - np.concatenate([expected] * 2)).max() < 1e-9


def test_a_clip_that_jumps_back_is_cut_and_labelled_piece_by_piece_untold():
    """The same walk played twice, neither the jump nor labels given: the solve finds the jump
    (cut_frames) and labels each half on its own, as the walk alone (no contact on the
    jump's frame), so no foot is held across it. Labelled as one clip, a contact ran across
    the jump and the pelvis moved 2.7 m to hold it: slide 14 -> 21 cm/s."""
    skeleton, motion, rig = load("cmu_131_01")
    sliding = scale_root_motion(skeleton, motion, 1.25)
    alone = remove_foot_sliding(skeleton, sliding, rig, bvh.UP)
    twice = type(sliding)(np.concatenate([sliding.rot] * 2), np.concatenate([sliding.pos] * 2), sliding.fps,
                          dict(sliding.meta))
    both = remove_foot_sliding(skeleton, twice, rig, bvh.UP)
    assert not both.warnings
    away_from_the_jump = np.arange(2 * motion.frames) != motion.frames
    for got, expected in ((both.contacts, alone.contacts), (both.heel_contacts, alone.heel_contacts)):
        assert np.array_equal(got[:, away_from_the_jump], np.tile(expected, 2)[:, away_from_the_jump])
    reference = np.tile(reference_labels(skeleton, motion, rig), 2)
    reference[:, motion.frames - 1 : motion.frames + 1] = False  # the step across the jump is no slide
    assert metrics.toe_slide(toe_positions(skeleton, both.motion, rig), reference, bvh.UP, motion.fps) < 0.005


def test_a_capture_pop_is_no_cut_and_the_feet_hold_through_it():
    """The walk thrown 30 cm sideways for two frames (17 ms at 120 fps) once a second: each
    pop jumps out and back as fast as a cut, and was cut twice, each frame of it a piece of
    its own that kept the pop: the feet slid 62 -> 53 cm/s over the clean walk's stances
    while the report said 0.00. A jump undone within POP_TIME is no cut: the lock holds the
    feet through it."""
    from foot_lock.solvers.foot_lock import cut_frames

    skeleton, motion, rig = load("cmu_07_01")
    popped = glitched(motion, shift=(0.3, 0.0, 0.0))
    assert len(cut_frames(skeleton, popped, rig)) == 0
    result = remove_foot_sliding(skeleton, popped, rig, bvh.UP)
    reference = reference_labels(skeleton, motion, rig)
    assert metrics.toe_slide(toe_positions(skeleton, result.motion, rig), reference, bvh.UP, motion.fps) < 0.01
    # A jump that is not undone so soon is a cut, each way.
    held = glitched(motion, shift=(0.3, 0.0, 0.0), every=2.0, seconds=0.5)
    assert list(cut_frames(skeleton, held, rig)) == [120, 180]


def test_a_foot_that_grows_while_planted_is_reported():
    """Animated scale on a foot: held at heel and ball it cannot keep both (its ball slides
    a little); the report says so rather than leaving the after figure to explain itself."""
    skeleton, motion, rig = load("cmu_07_01")
    sliding = scale_root_motion(skeleton, motion, 1.25)
    assert not remove_foot_sliding(skeleton, sliding, rig, bvh.UP).warnings
    growing = type(sliding)(sliding.rot.copy(), sliding.pos.copy(), sliding.fps, dict(sliding.meta))
    left = rig.legs[0]
    growing.pos[:, [left.toe, left.toe_end]] *= np.linspace(1.0, 1.1, motion.frames)[:, None, None]
    (warning,) = remove_foot_sliding(skeleton, growing, rig, bvh.UP).warnings
    assert warning.startswith(f"the {left.name} foot changes length by up to 1% within a stance")


def test_a_contact_keyed_through_a_swing_is_reported_with_its_times():
    """An animator's contact held from one stance through the swing into the next: the lock
    obeys it and the pelvis moves about a metre all along the clip to reach the held foot,
    which the report said nothing about. It now names the foot, the curve and the times."""
    skeleton, motion, rig = load("cmu_07_01")
    sliding = scale_root_motion(skeleton, motion, 1.25)
    labelled = remove_foot_sliding(skeleton, sliding, rig, bvh.UP)
    assert not labelled.warnings
    contacts = labelled.contacts.copy()
    contacts[0, 136:201] = 1.0  # 1.13-1.67 s: the left foot's swing
    result = remove_foot_sliding(skeleton, sliding, rig, bvh.UP, contacts=contacts,
                                 heel_contacts=labelled.heel_contacts)
    assert result.after["pelvis_deviation_cm"] > 30.0  # obeyed: the edit is the animator's call
    (warning,) = result.warnings
    first, last = (float(t) for t in warning.split(" (")[1].split(" s ")[0].split("-"))
    assert warning.startswith(f"the {rig.legs[0].name} foot is pinned") and "foot_contact" in warning
    assert warning.endswith("check its foot_contact curve there (a contact through a swing?)")
    assert first <= 136 / motion.fps and last >= 200 / motion.fps
    # In frames too, as the Graph Editor shows them, with where the pelvis moves most.
    numbered = remove_foot_sliding(skeleton, sliding, rig, bvh.UP, contacts=contacts,
                                   heel_contacts=labelled.heel_contacts, first_frame=1).warnings[0]
    first_frame, last_frame = (int(f) for f in numbered.split(" over frames ")[1].split(" ")[0].split("-"))
    assert first_frame <= 137 and last_frame >= 201 and abs(first * motion.fps + 1 - first_frame) < 1.0
    pelvis = [forward_kinematics(skeleton, m.rot, m.pos)[1][:, rig.pelvis] for m in (result.motion, sliding)]
    assert f"(most at frame {int(np.linalg.norm(pelvis[0] - pelvis[1], axis=-1).argmax()) + 1})" in numbered


@pytest.mark.parametrize(("clip", "fps"), [("cmu_131_02", 24), ("cmu_131_02", 30), ("cmu_131_01", 24), ("cmu_01_01", 120)])
def test_no_heel_is_pinned_for_a_single_frame(clip, fps):
    """A pin holds its point from one frame to the next: a heel pinned on one frame alone holds
    no step, it only stops for that frame (cmu_131_01 at 24 fps, a heel rolling up at 34 cm/s
    stopped at 1 for a frame; cmu_131_02 at 24 fps had 13 such heels, cmu_01_01 at 120 fps 4)."""
    skeleton, motion, rig = load(clip)
    heels = remove_foot_sliding(skeleton, decimate(motion, fps), rig, bvh.UP).heel_contacts > 0
    padded = np.pad(heels, ((0, 0), (1, 1)))
    assert not (heels & ~padded[:, :-2] & ~padded[:, 2:]).any()


def test_feet_carried_by_a_root_faster_than_the_steps_are_told_to_slow_the_travel():
    """The walk's root travelling twice as far as its steps (a runtime's root speed, or a Follow
    Path, far too fast): the stances are labelled right and held, and the pelvis is pulled
    back to reach them. The warning told the animator to unkey the contacts, as for a slow
    motion's swings; the feet fall back from the pelvis all along, as in a stance, so it now
    says the travel outruns the steps."""
    skeleton, motion, rig = load("cmu_07_01")
    warnings = remove_foot_sliding(skeleton, scale_root_motion(skeleton, motion, 2.0), rig, bvh.UP).warnings
    assert len(warnings) == len(rig.legs)
    for leg, warning in zip(rig.legs, warnings):
        assert warning.startswith(f"the {leg.name} foot is pinned")
        assert warning.endswith("the body travels further than the foot steps there (its root, or the object "
                                "carrying it, faster than the walk?): slow that travel down to the steps' pace")


def test_a_foot_labelled_planted_far_along_its_path_is_told_as_the_labeller_s_call():
    """The walk played ten times slower than captured (slow motion: its swings as slow as a
    stance's slide): the labels hold each foot over metres, and the warning says the labeller
    put them there (not an animator's curve to check) and which curve to key to free it."""
    skeleton, motion, rig = load("cmu_07_01")
    slowed = type(motion)(motion.rot, motion.pos, motion.fps / 10.0, dict(motion.meta))
    warnings = remove_foot_sliding(skeleton, slowed, rig, bvh.UP).warnings
    assert len(warnings) == len(rig.legs)
    for leg, warning in zip(rig.legs, warnings):
        assert warning.startswith(f"the {leg.name} foot is pinned")
        assert warning.endswith("labelled planted there as it moves so slowly near its ground (a clip playing far "
                                "slower than it was captured?): key its foot_contact curve to 0 where it moves")


def test_the_feet_on_the_ground_are_judged_on_the_same_frames_before_and_after_a_fix():
    """cmu_01_01's turn (15.5-19 s) at 20 fps: the fix holds the turning feet on the ground
    on more frames (grounded share 0.67 -> 0.78), and its feet slide less. Each state judged
    on its own frames on the ground, the figure rose, 4.8 -> 6.4 cm/s: the frames the fix
    added are where the input's feet moved fastest. Judged on the frames either state has on
    the ground, it reads 10.4 -> 6.4."""
    skeleton, motion, rig = load("cmu_01_01")
    turn = slice(round(15.5 * motion.fps), round(19.0 * motion.fps))
    clip = decimate(Motion(motion.rot[turn], motion.pos[turn], motion.fps), 20)
    result = remove_foot_sliding(skeleton, clip, rig, bvh.UP)
    assert result.after["grounded_share"] > result.before["grounded_share"] + 0.03
    assert result.after["ground_slide_cm_s"] < 0.7 * result.before["ground_slide_cm_s"]
