"""The per-frame foot lock of the live preview, on synthetic walks (numpy only)."""

import math

import numpy as np
import pytest
from foot_lock.solvers import quaternion as quat
from foot_lock.solvers.contacts import REFERENCE_LEG_LENGTH
from foot_lock.solvers.runtime_lock import (
    SWING_WINDOW,
    VERTICAL_BLEND_SHARE,
    FootLocker,
    PelvisDrop,
    PelvisPull,
    RuntimeSettings,
    align_to_normal,
    eased_ground,
    path_window,
    root_follow,
)

UP = np.array([0.0, 0.0, 1.0])
FPS = 60.0
DT = 1.0 / FPS
SPEED = 1.2  # m/s of the root
PERIOD = 1.0  # s per gait cycle
STANCE = 0.6  # share of the cycle a foot is planted


def walk(seconds=4.0, root_scale=1.0, lift=0.1):
    """Toes (F, 2, 3) and true contacts (F, 2) of a walk along +X.

    Each toe stands still in stance and swings one stride forward. ``root_scale``
    plays the root faster than the feet were authored for, as a character whose
    root motion was scaled: a planted toe then slides at ``(root_scale - 1) * SPEED``.
    """
    time = np.arange(round(seconds * FPS)) / FPS
    toes = np.zeros((len(time), 2, 3))
    contacts = np.zeros((len(time), 2))
    stride = SPEED * PERIOD
    for leg, (side, delay) in enumerate(((0.1, 0.0), (-0.1, 0.5))):
        cycles, phase = np.divmod(time / PERIOD + delay, 1.0)
        swing = np.clip((phase - STANCE) / (1.0 - STANCE), 0.0, 1.0)
        ease = swing * swing * (3.0 - 2.0 * swing)
        toes[:, leg, 0] = (cycles + ease) * stride - delay * stride
        toes[:, leg, 1] = side
        toes[:, leg, 2] = 0.03 + lift * np.sin(np.pi * swing)
        contacts[:, leg] = phase < STANCE
    toes[..., 0] += (root_scale - 1.0) * SPEED * time[:, None]
    return toes, contacts


def play(locker, toes, contacts=None, heights=None, dt=DT):
    return np.stack([
        locker.update(toes[f], dt, None if contacts is None else contacts[f],
                      None if heights is None else heights[f])
        for f in range(len(toes))
    ])


def spans(flags):
    """(start, end) frame ranges where the boolean series ``flags`` is true."""
    edges = np.diff(np.concatenate(([0], flags.astype(int), [0])))
    return zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1))


def steps(positions):
    return np.linalg.norm(np.diff(positions, axis=0), axis=-1)


@pytest.mark.parametrize("use_curves", [True, False])
def test_locking_and_releasing_never_jump(use_curves):
    """Each frame moves the toe no more than the input moves, plus the eased catch-up.

    A switch leaves an offset p (at most the largest lag behind the input) moving at
    v (at most the displayed plus the input speed then); it decays along a cubic whose
    steepest slope is 1.5 p / blend_time + v. A snap would close all of p in one frame.
    """
    settings = RuntimeSettings()
    toes, contacts = walk(root_scale=1.1)
    locker = FootLocker(REFERENCE_LEG_LENGTH, settings, UP)
    out, locked = [], []
    for f in range(len(toes)):
        out.append(locker.update(toes[f], DT, contacts[f] if use_curves else None))
        locked.append(locker.locked.copy())
    out, locked = np.array(out), np.array(locked)
    assert np.isfinite(out).all()
    switched = np.diff(locked.astype(int), axis=0) != 0
    assert switched.sum() >= 6  # the walk really locked and released several times
    lag = np.linalg.norm(out - toes, axis=-1).max()
    speed_at_switch = ((steps(out) + steps(toes)) / DT)[switched].max()
    margin = (1.5 * lag / settings.blend_time + speed_at_switch) * DT
    assert lag > 0.05 and margin < lag  # so closing the largest lag in one frame would fail
    assert (steps(out) <= steps(toes) + margin + 1e-12).all()


def test_planted_foot_stays_put_while_the_root_slides():
    settings = RuntimeSettings()
    toes, _ = walk(root_scale=1.1)  # stance slides at 0.12 m/s, below plant_speed
    locker = FootLocker(REFERENCE_LEG_LENGTH, settings, UP)
    locked, out = [], []
    for f in range(len(toes)):
        out.append(locker.update(toes[f], DT))
        locked.append(locker.locked.copy())
    out, locked = np.array(out), np.array(locked)
    settle = math.ceil(settings.blend_time * FPS)
    checked = 0
    for leg in range(2):
        for start, end in spans(locked[:, leg]):
            held = out[start + settle : end, leg]
            if len(held) < 10:
                continue
            assert np.linalg.norm(held - held[0], axis=-1).max() < 1e-3
            input_drift = np.linalg.norm(toes[end - 1, leg] - toes[start + settle, leg])
            assert input_drift > 0.03  # the input really slid meanwhile
            checked += 1
    assert checked >= 4


@pytest.mark.parametrize("start_speed", [0.0, 0.6])
def test_speed_between_thresholds_never_flickers(start_speed):
    """Between plant (0.15) and lift (0.4) speed the planted state holds, whichever it is."""
    time = np.arange(round(3.0 * FPS)) / FPS
    speed = 0.25 + 0.05 * np.sin(2.0 * np.pi * 3.0 * time)
    speed[: round(0.2 * FPS)] = start_speed
    x = np.concatenate(([0.0], np.cumsum(speed[1:] * DT)))
    toes = np.stack([np.column_stack([x, np.zeros_like(x), np.zeros_like(x)])] * 2, axis=1)
    locker = FootLocker(REFERENCE_LEG_LENGTH, RuntimeSettings(), UP)
    planted = []
    for f in range(len(toes)):
        locker.update(toes[f], DT)
        planted.append(locker.planted.copy())
    oscillating = np.array(planted)[round(0.3 * FPS) :]
    assert (oscillating == (start_speed < 0.15)).all()


def test_replanting_during_catch_up_eases_in():
    """A foot released and planted again before it caught up eases the rest of the way."""
    settings = RuntimeSettings(lock_distance=0.2)
    frames = round(1.0 * FPS)  # ends before the new lock lags past unlock_distance
    x = 0.3 * np.arange(frames) * DT  # stance sliding at 0.3 m/s
    toes = np.zeros((frames, 1, 3))
    toes[:, 0, 0] = x
    contacts = np.ones((frames, 1))
    release = round(0.5 * FPS)
    contacts[release : release + 3] = 0.0  # off for 3 frames, well inside blend_time
    locker = FootLocker(REFERENCE_LEG_LENGTH, settings, UP)
    out, locked = [], []
    for f in range(frames):
        out.append(locker.update(toes[f], DT, contacts[f]))
        locked.append(locker.locked[0])
    out = np.array(out)[:, 0]
    relock = release + 3
    assert not locked[release] and locked[relock]
    assert np.linalg.norm(out[relock] - toes[relock, 0]) > 0.05  # re-planted centimetres behind
    lag = np.linalg.norm(out[release] - toes[release, 0])
    margin = 1.5 * lag * DT / settings.blend_time + 0.3 * DT
    assert steps(out).max() <= margin
    # ... and it does get there: at rest on the new contact once the blend has run out.
    settled = out[relock + math.ceil(settings.blend_time * FPS) + 1 :]
    assert np.allclose(settled, locker.contact[0])


def test_a_release_catches_up_along_up_faster_than_across():
    """Released 10 cm behind and 10 cm below its animation (the ground ahead rose while it
    was locked), a toe is up with it after a third of the blend time, still easing in
    across the ground, and never overshoots."""
    settings = RuntimeSettings()
    locker = FootLocker(REFERENCE_LEG_LENGTH, settings, UP)
    drift = np.linspace(0.0, 0.1, round(0.5 * FPS))[:, None] * [1.0, 0.0, 1.0]
    for toe in drift:  # locked while the animation drifts forward and up
        locker.update(toe[None], DT, np.ones(1))
    assert locker.locked[0] and np.allclose(locker.position, locker.contact) and locker.contact[0, 2] < 0.01
    frames = math.ceil(settings.blend_time * VERTICAL_BLEND_SHARE * FPS)
    moving = drift[-1] + np.arange(1, frames + 2)[:, None] * (drift[1] - drift[0])
    out = np.array([locker.update(toe[None], DT, np.zeros(1))[0] for toe in moving])
    assert not locker.locked[0]
    assert out[-1, 2] == pytest.approx(moving[-1, 2], abs=1e-9) and moving[-1, 0] - out[-1, 0] > 0.02
    assert np.all(np.diff(out, axis=0)[:, [0, 2]] >= -1e-12) and np.all(out[:, 2] <= moving[:, 2] + 1e-9)


@pytest.mark.parametrize("reachable", [None, False, True])
def test_a_lock_lagging_past_unlock_distance_holds_while_its_leg_reaches_it(reachable):
    """The contact goes on while the animation slides away at 0.3 m/s: the lock lets go once
    it lags unlock_distance behind, unless its leg is said to reach it still (a clip whose
    root runs ahead of its feet, on a long stance: it holds until the contact ends)."""
    settings = RuntimeSettings()
    frames = round(1.5 * FPS)  # 45 cm of slide
    toes = np.zeros((frames, 1, 3))
    toes[:, 0, 0] = 0.3 * np.arange(frames) * DT
    locker = FootLocker(REFERENCE_LEG_LENGTH, settings, UP)
    locked, contact = [], []
    for f in range(frames):
        locker.update(toes[f], DT, np.ones(1), reachable=None if reachable is None else np.array([reachable]))
        locked.append(locker.locked[0])
        contact.append(locker.contact[0, 0])
    locked = np.array(locked)
    assert locked[round(0.2 * FPS)]
    if reachable:
        assert locked[round(0.2 * FPS):].all()
    else:
        lets_go = np.flatnonzero(~locked & (np.arange(frames) > round(0.2 * FPS)))[0]
        lag = toes[lets_go, 0, 0] - contact[lets_go - 1]
        assert settings.unlock_distance < lag <= settings.unlock_distance + 0.3 * DT + 1e-9


def test_ahead_shows_where_a_released_toe_will_blend():
    """Released 20 cm behind its animation, the toe goes where ``ahead`` said it would over
    the next frames (the blend's catch-up, no switch), not where its animation goes."""
    locker = FootLocker(REFERENCE_LEG_LENGTH, RuntimeSettings(), UP)
    x = 0.4 * np.arange(round(0.8 * FPS)) * DT
    toes = np.stack([x, np.zeros_like(x), 0.05 * x], axis=-1)[:, None]
    contacts = np.ones((len(x), 1))
    release = round(0.5 * FPS)
    contacts[release:] = 0.0
    for f in range(release + 1):
        locker.update(toes[f], DT, contacts[f])
    assert not locker.locked[0] and np.linalg.norm(locker.position[0] - toes[release, 0]) > 0.15
    coming = toes[release + 1 : release + 11].transpose(1, 0, 2)  # (1, 10, 3)
    predicted = locker.ahead(coming, DT)
    shown = np.stack([locker.update(toes[f], DT, contacts[f]) for f in range(release + 1, release + 11)], axis=1)
    assert np.allclose(predicted, shown)
    assert np.linalg.norm(shown - coming, axis=-1)[0, 0] > 0.15  # well behind its animation at first


@pytest.mark.parametrize("bad_dt", [-DT, 0.0, float("nan"), 5.0])
def test_jump_restarts_from_the_input(bad_dt):
    toes, contacts = walk(seconds=2.0, root_scale=1.25)
    locker = FootLocker(REFERENCE_LEG_LENGTH, RuntimeSettings(), UP)
    play(locker, toes[:70], contacts[:70])
    assert locker.locked.any()
    target = locker.update(toes[20], bad_dt, contacts[20])
    assert np.isfinite(target).all()
    assert np.array_equal(target, toes[20])
    assert not locker.locked.any()
    resumed = play(locker, toes[21:60], contacts[21:60])
    assert np.isfinite(resumed).all()


@pytest.mark.parametrize("use_curves", [True, False])
@pytest.mark.parametrize("start", [17, 45, 100])
def test_playing_from_any_frame_converges_to_playing_from_the_start(use_curves, start):
    toes, contacts = walk(seconds=4.0, root_scale=1.1)
    curves = contacts if use_curves else None
    from_start = play(FootLocker(REFERENCE_LEG_LENGTH, RuntimeSettings(), UP), toes, curves)
    scrubbed = FootLocker(REFERENCE_LEG_LENGTH, RuntimeSettings(), UP)
    play(scrubbed, toes[start + 30 :], None if curves is None else curves[start + 30 :])
    scrubbed.update(toes[start], -1.0)  # jump back, then play on
    from_k = play(scrubbed, toes[start + 1 :], None if curves is None else curves[start + 1 :])
    # Settled once the stance under way has ended and its release has blended out.
    settle = round((STANCE * PERIOD + RuntimeSettings().blend_time + 0.1) * FPS)
    assert np.allclose(from_k[settle:], from_start[start + 1 + settle :], atol=1e-9)
    assert not np.allclose(from_k[:settle], from_start[start + 1 : start + 1 + settle], atol=1e-4)


def test_thresholds_scale_with_leg_length():
    """The same walk in centimetres on a leg 100 times longer: the same result, in centimetres."""
    toes, _ = walk(root_scale=1.1)
    heights = np.full(toes.shape[:2], 0.01)
    metres = play(FootLocker(REFERENCE_LEG_LENGTH, RuntimeSettings(), UP), toes, heights=heights)
    centimetres = play(FootLocker(100 * REFERENCE_LEG_LENGTH, RuntimeSettings(), UP), 100 * toes,
                       heights=100 * heights)
    assert np.allclose(centimetres, 100 * metres, rtol=0, atol=1e-9)
    assert not np.allclose(metres, toes, atol=1e-3)  # locking did change the toes


def test_contact_height_pins_the_lock_point():
    toes, contacts = walk(seconds=1.0)
    locker = FootLocker(REFERENCE_LEG_LENGTH, RuntimeSettings(), UP)
    play(locker, toes, contacts, heights=np.full(contacts.shape, -0.02))
    assert locker.locked.any()
    assert np.allclose(locker.contact[locker.locked, 2], -0.02)


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0, 120.0])
def test_path_window_spans_the_same_time_at_any_frame_rate(fps):
    offsets, weights = path_window(fps)
    assert offsets[np.argmax(weights)] == 0 and weights.max() == 1.0
    assert offsets.max() / fps == pytest.approx(SWING_WINDOW, abs=0.5 / fps + 1e-9)
    assert -offsets.min() / fps == pytest.approx(SWING_WINDOW / 3, abs=0.5 / fps + 1e-9)  # shorter behind
    assert (np.diff(offsets) == 1).all() and (weights > 0).all()
    assert np.all(np.diff(weights[offsets >= 0]) < 0) and np.all(np.diff(weights[offsets <= 0]) > 0)


def test_eased_ground_rises_before_a_step_and_never_dips_early():
    """A walker at 1 m/s toward a 12 cm step 0.3 m ahead, then over it; then toward a
    step down, where it keeps the higher ground until it has passed the edge."""
    fps = 120.0
    offsets, weights = path_window(fps)
    times = np.arange(-0.5, 0.6, 1.0 / fps)

    def profile(step):
        heights = np.array([[step(t + k / fps) for k in offsets] for t in times])
        return eased_ground(heights, np.ones_like(heights, dtype=bool), np.zeros(len(times)), weights)

    up = profile(lambda t: 0.12 if t >= 0.0 else 0.0)
    assert np.all(up[times >= 0.0] == pytest.approx(0.12))  # over the step, all of it
    assert np.all(up[times < -SWING_WINDOW - 1.0 / fps] == 0.0)  # far before it, nothing
    assert np.all(np.diff(up) >= 0.0) and np.diff(up).max() < 0.12 / (SWING_WINDOW * fps)  # eased over the window
    down = profile(lambda t: 0.0 if t >= 0.0 else 0.12)
    assert np.all(down[times < 0.0] == pytest.approx(0.12))
    assert np.all(down[times > SWING_WINDOW / 3 + 1.0 / fps] == 0.0)
    assert np.all(np.diff(down) <= 0.0)


def test_eased_ground_climbs_a_flight_of_steps_with_no_jump():
    """A walker whose window spans two steps (12 cm every 0.1 s of its path, a fast swing)
    climbs evenly: no frame lifts it by more than both edges in its window ease it (it
    jumped by half a rise as it crossed one edge with the next one in its window), and it
    is over each tread by the time it gets there."""
    fps = 120.0
    offsets, weights = path_window(fps)
    times = np.arange(-0.3, 0.5, 1.0 / fps)
    heights = np.array([[0.12 * max(math.floor((t + k / fps) / 0.1) + 1, 0) for k in offsets] for t in times])
    climb = eased_ground(heights, np.ones_like(heights, dtype=bool), np.zeros(len(times)), weights)
    assert np.all(np.diff(climb) >= -1e-12)
    assert np.diff(climb).max() <= 2 * 0.12 / (SWING_WINDOW * fps) + 1e-9
    assert np.all(climb >= heights[:, np.argmax(weights)] - 1e-12)


def test_eased_ground_uses_the_fallback_where_samples_do_not_count():
    heights = np.array([[0.3, 0.3, 0.3], [0.2, 0.9, 0.2]])
    valid = np.array([[False, False, False], [True, False, True]])
    weights = np.array([0.5, 1.0, 0.5])
    assert eased_ground(heights, valid, np.array([0.0, 0.1]), weights) == pytest.approx([0.0, 0.15])


def test_pelvis_drops_just_enough_and_smoothly():
    hips = np.array([[0.0, 0.1, 1.0], [0.0, -0.1, 1.0]])
    ankles = np.array([[0.2, 0.1, 0.15], [0.1, -0.1, -0.1]])  # the right foot stands 0.25 lower
    reach = np.array([0.9, 0.9])
    drop = PelvisDrop(time_constant=0.1, max_drop=0.3, up=UP)
    first = drop.update(hips, ankles, reach, dt=DT)
    assert first > 0.0
    lowered = hips - first * UP
    distances = np.linalg.norm(lowered - ankles, axis=-1)
    assert distances.max() == pytest.approx(0.9)  # just enough: the longer leg is at its reach

    lower = ankles + [0.0, 0.0, -0.05]
    history = [drop.update(hips, lower, reach, DT) for _ in range(60)]
    assert np.linalg.norm(hips - history[-1] * UP - lower, axis=-1).max() == pytest.approx(0.9, abs=1e-4)
    history += [drop.update(hips, ankles + [0.0, 0.0, 0.3], reach, DT) for _ in range(round(2.0 * FPS))]
    changes = np.abs(np.diff([first] + history))
    # Eases: no frame closes more than its exponential share of the largest change asked for.
    assert changes.max() <= max(history) * (1.0 - math.exp(-DT / 0.1)) + 1e-12
    assert min(history) >= 0.0 and history[-1] < 1e-3  # back to the animation within 2 s, never above it

    drop.reset()
    assert drop.update(hips, ankles + [0.0, 0.0, -2.0], reach, DT) == 0.3  # clamped to max_drop


def test_pelvis_pull_moves_across_just_enough_toward_a_foot_out_of_reach():
    hips = np.array([[0.0, 0.1, 0.8], [0.0, -0.1, 0.8]])
    ankles = np.array([[-0.5, 0.1, 0.1], [0.2, -0.1, 0.1]])  # the left foot far behind
    reach = np.array([0.8, 0.8])
    pull = PelvisPull(time_constant=0.05, max_pull=0.2, up=UP)
    first = pull.update(hips, ankles, reach, dt=DT)
    assert first[0] < 0.0 and first[1] == first[2] == 0.0  # back toward the left foot, across only
    assert np.linalg.norm(hips + first - ankles, axis=-1).max() == pytest.approx(0.8)  # just enough
    within = pull.update(hips, ankles * [0.1, 1.0, 1.0], reach, DT)
    assert 0.0 < np.linalg.norm(within) < np.linalg.norm(first)  # coming back, eased: not within a frame
    pull.reset()
    assert np.linalg.norm(pull.update(hips, ankles - [2.0, 0.0, 0.0], reach, DT)) == pytest.approx(0.2)  # capped
    pull.reset()
    assert not pull.update(hips, ankles * [0.1, 1.0, 1.0], reach, DT).any()  # within reach: nothing


def test_foot_alignment_respects_max_tilt():
    tilt = np.radians([10.0, 60.0, 0.0, 10.0])
    normals = np.column_stack([np.sin(tilt), np.zeros(4), np.cos(tilt)])
    normals[3] *= -1.0  # the same slope hit from behind
    rotations = align_to_normal(normals, max_tilt=np.radians(30.0), up=UP)
    assert np.allclose(np.linalg.norm(rotations, axis=-1), 1.0)
    turned = quat.rotate(rotations, np.broadcast_to(UP, (4, 3)))
    angles = np.degrees(np.arccos(np.clip(turned @ UP, -1, 1)))
    assert angles == pytest.approx([10.0, 30.0, 0.0, 10.0])
    assert np.allclose(turned[0], normals[0]) and np.allclose(turned[3], -normals[3])
    assert turned[1, 0] > 0 and abs(turned[1, 1]) < 1e-12  # toward the slope, no further
    assert np.allclose(align_to_normal(np.zeros((1, 3)), 0.5, UP), quat.IDENTITY)


def test_root_climbs_steps_instead_of_jolting():
    offset, history = 0.0, []
    for frame in range(120):
        offset = root_follow(offset, 0.2 if frame >= 10 else 0.0, DT, time_constant=0.15)
        history.append(offset)
    assert np.abs(np.diff(history)).max() <= 0.2 * (1.0 - math.exp(-DT / 0.15)) + 1e-12
    assert history[-1] == pytest.approx(0.2, abs=1e-3)
    assert root_follow(0.05, 0.2, -DT, 0.15) == 0.2  # scrubbing snaps


def test_a_release_leaves_with_the_animation_and_only_eases_out_the_gap():
    """Contacts that end after the toe has started its swing: the lock holds the toe back
    a little while its animation already moves. Released, the toe never falls further
    behind its animation than it was at the release (the still lock's zero velocity is not
    carried into the swing): the gap only shrinks, to nothing by the end of the blend."""
    settings = RuntimeSettings()
    toes, contacts = walk()
    late = np.roll(contacts, 4, axis=0)  # each contact ends four frames into the swing
    locker = FootLocker(REFERENCE_LEG_LENGTH, settings, UP)
    out, locked = [], []
    for f in range(len(toes)):
        out.append(locker.update(toes[f], DT, late[f]))
        locked.append(locker.locked.copy())
    gap = np.linalg.norm(np.array(out) - toes, axis=-1)
    released = np.argwhere(np.diff(np.array(locked).astype(int), axis=0) == -1)
    blend = math.ceil(settings.blend_time / DT)
    assert len(released) >= 4
    for f, leg in released:
        at_release = gap[f + 1, leg]
        assert at_release > 1e-3  # the lock did hold the moving toe back
        assert (np.diff(gap[f + 1 : f + blend + 1, leg]) <= 1e-12).all()
        assert gap[f + blend + 1, leg] < 1e-9


def test_a_lock_on_moving_ground_moves_with_it():
    """A toe locked on a carrier moves as ``carry`` says the carrier moved; on still ground
    (carrier -1) it stays put."""
    velocity = np.array([0.5, 0.0, 0.0])
    toes = np.tile([[0.0, 0.1, 0.03], [0.0, -0.1, 0.03]], (30, 1, 1))
    locker = FootLocker(REFERENCE_LEG_LENGTH, RuntimeSettings(), UP)

    def carry(carriers, points):
        return points + DT * velocity * (carriers == 0)[:, None]

    out = np.stack([locker.update(toes[f], DT, [1.0, 1.0], None, [0, -1], carry) for f in range(len(toes))])
    assert locker.locked.all()
    assert np.allclose(out[-1, 0] - out[1, 0], (len(toes) - 2) * DT * velocity)
    assert np.allclose(out[:, 1], toes[:, 1])
