"""Per-frame foot locking for a live preview.

The seed is "Runtime Foot Locking" in the article "Inverse Kinematics and Foot Locking:
From Two-Bone IK to Offline Slide Removal" (the team's ``seeds/ik-and-foot-locking.txt``).

A frame-change handler calls :meth:`FootLocker.update` once per displayed frame with
the toes of one character; every leg is handled at once with small numpy arrays, so
a call costs tens of microseconds. During a contact a toe follows a fixed floor
point, otherwise the animated toe; every switch between the two is inertialized
from what is displayed at that moment, so nothing ever jumps -- also when a foot
plants again while it is still catching up with the animation. A lock eases in the
displayed position and velocity; a release only the position (it leaves with the
animation's velocity).

Scrubbing: a step that is not a small positive time (frame went backward, jumped
ahead, or the clip changed) restarts every leg from the input. Locks are short --
one stance -- so playing forward from any frame gives exactly the targets of a
playback from the start once the stance under way has ended and its catch-up
blend has run out.

The terrain helpers are pure numpy too: the Blender side supplies the ray hits.

Distances and speeds in :class:`RuntimeSettings` are for a reference human and are
scaled by ``leg_length / REFERENCE_LEG_LENGTH``, so any unit or character size
behaves alike.
"""

import math
from dataclasses import dataclass

import numpy as np

from . import quaternion as quat
from .contacts import REFERENCE_LEG_LENGTH

# The ground under a walker is sampled along its path this long (seconds) after the current
# frame, and a third of it before: a step edge that far ahead starts raising a swinging toe,
# one passed has let it down again soon after (see eased_ground). A 12 cm rise is climbed
# at under 1 m/s.
SWING_WINDOW = 0.15


# Share of the blend time over which an offset along up decays (across the ground: all of it).
VERTICAL_BLEND_SHARE = 1.0 / 3.0

# A foot setting down is checked for a step edge under it at this many points from heel to
# toe, and moved along itself by up to its own length, in this many shifts each way, to
# land on one tread (see placement_shifts).
FOOT_SAMPLES = 5
PLACEMENT_STEPS = 8
# Where the heel will be is checked over the stance ahead each time it has moved another
# HEEL_SPACING (m) about the toe, at most at STANCE_SAMPLES frames.
STANCE_SAMPLES = 24
HEEL_SPACING = 0.01
STEP_EDGE = 0.01  # m; ground further than this from a straight line under the foot has an edge


@dataclass
class RuntimeSettings:
    lock_distance: float = 0.1  # m; a toe locks only this close to its animated position ...
    unlock_distance: float = 0.25  # m; ... and lets go when it lags further behind
    blend_time: float = 0.15  # s; inertialization of every lock and release
    plant_speed: float = 0.15  # m/s; without contact curves a foot plants below this speed ...
    lift_speed: float = 0.4  # m/s; ... and lifts above this one (hysteresis: no flicker)
    max_correction: float = 0.5  # m; a larger terrain correction is a ledge or a bad hit
    # s; the pelvis drop's time constant, a game engine's default. The Preview uses the shorter
    # runtime_pose.PELVIS_DROP_SMOOTHING: on stairs a lagging pelvis drags the back foot.
    pelvis_drop_smoothing: float = 0.1
    # s; time constant of the critically damped ease on which the pelvis comes back (rises,
    # moves back across) once its feet need less: a release would otherwise spring it back
    # within a frame. Coming back late never drags a foot, a lower pelvis only bends the knees more.
    pelvis_return_smoothing: float = 0.15
    max_pelvis_drop: float = 0.15  # share of the leg length; more looks like a dinosaur
    max_pelvis_pull: float = 0.1  # share of the leg length the pelvis may move across toward a foot
    max_tilt: float = math.radians(25.0)  # a foot turns at most this far toward the ground normal
    root_follow_smoothing: float = 0.15  # s; time constant of the root following the terrain
    max_step: float = 0.2  # s; a longer (or non-positive) frame step is a jump, not playback


def length_scale(leg_length):
    """Factor from the reference human's metres to the character's units and size."""
    return leg_length / REFERENCE_LEG_LENGTH


class FootLocker:
    """Streaming foot lock for the L legs of one character.

    State is one row per leg, as in the seed's ``FootLockingState``: displayed
    ``position``/``velocity``, animated ``input_position``/``input_velocity``, the
    decaying ``offset_position``/``offset_velocity`` and the ``time`` since the last
    switch, the ``contact`` point, ``locked``, and ``planted`` (the contact source's
    state, with hysteresis when it comes from speed).
    """

    def __init__(self, leg_length, settings=None, up=(0.0, 0.0, 1.0)):
        self.settings = settings or RuntimeSettings()
        self.scale = length_scale(leg_length)
        self.up = np.asarray(up, dtype=float) / np.linalg.norm(up)
        self.reset()

    def reset(self):
        """Forget every leg's history: the next update starts from its input."""
        self.position = None

    def update(self, toe_positions, dt, contacts=None, contact_heights=None, carriers=None, carry=None,
               contact_shifts=None, reachable=None):
        """Toe targets (L, 3) for this frame.

        ``toe_positions`` (L, 3): animated toes in world space. ``dt``: seconds since
        the previous call; zero, negative, not finite or above ``max_step`` is a
        jump and restarts from the input (so does a change in the number of legs). ``contacts`` (L,): contact curve values,
        > 0.5 is in contact; ``None`` decides by the toe's own speed. ``contact_heights``
        (L,): height along ``up`` at which a foot that locks now is pinned (the
        terrain under it plus the toe's clearance); ``None`` or NaN entries keep the
        animated toe's height. ``carriers`` (L,): the moving ground under each toe now
        (an index, -1 for still ground or none), which a foot that locks now moves with;
        ``carry(carriers, points)`` moves points (k, 3) held on carriers (k,) as they moved
        since the previous call. ``contact_shifts`` (L, 3): how far from the animated toe
        a foot that locks now is pinned across the ground (off a step edge); None: not at all.
        ``reachable`` (L,): whether each leg can still reach its lock; where given, a lock
        lagging further than ``unlock_distance`` behind its animation holds on while its leg
        reaches it, and lets go only when its contact ends (the clip lifts the foot, and
        the catch-up hides in the swing) or the leg cannot follow; None: it lets go at
        ``unlock_distance``.
        """
        toes = np.array(toe_positions, dtype=float)
        if self.position is None or self.position.shape != toes.shape or not 0.0 < dt <= self.settings.max_step:
            self._start_at(toes)
            return self.position.copy()
        self.input_velocity = (toes - self.input_position) / dt
        self.input_position = toes
        self._carry(carry)
        self._follow_targets(dt)
        self._update_planted(contacts)
        self._switch_locks(contact_heights, carriers, contact_shifts, reachable)
        return self.position.copy()

    def _start_at(self, toes):
        legs = len(toes)
        self.position = toes.copy()
        self.velocity = np.zeros((legs, 3))
        self.input_position = toes.copy()
        self.input_velocity = np.zeros((legs, 3))
        self.offset_position = np.zeros((legs, 3))
        self.offset_velocity = np.zeros((legs, 3))
        self.time = np.zeros(legs)
        self.contact = toes.copy()
        self.locked = np.zeros(legs, dtype=bool)
        self.carrier = np.full(legs, -1)  # the moving ground each lock holds on (-1: still ground)
        self.placement = np.zeros((legs, 3))  # how far each lock was moved from its animated toe
        # Unknown until a speed has been measured; contact curves overwrite it next frame.
        self.planted = np.zeros(legs, dtype=bool)

    def _follow_targets(self, dt):
        """InertializeCubicUpdate: the current target plus the decaying switch offset."""
        target, target_velocity = self._targets()
        self.time += dt
        offset, offset_velocity = self._decayed(self.time, self.offset_position, self.offset_velocity)
        self.position, self.velocity = target + offset, target_velocity + offset_velocity

    def _decayed(self, time, offset_position, offset_velocity):
        """What is left at ``time`` (m,) since the switch of switch offsets (m, 3): position, velocity."""
        up = self.up
        position, velocity = np.zeros_like(offset_position), np.zeros_like(offset_velocity)
        # Across the ground over the blend time; a foot shown below its target faster: one
        # released where the ground ahead rises (a step edge) must catch up with its lifted
        # animation before it reaches the edge. One shown above comes down no faster than
        # it moves across: a foot going down a step would otherwise sink into its edge.
        below = offset_position @ up < 0.0
        for share, project in ((1.0, lambda v: v - (v @ up)[:, None] * up),
                               (np.where(below, VERTICAL_BLEND_SHARE, 1.0), lambda v: (v @ up)[:, None] * up)):
            w0, w1, w2, w3 = _decay_weights(time, share * self.settings.blend_time)
            offset, offset_velocity = project(offset_position), project(offset_velocity)
            position += w0 * offset + w1 * offset_velocity
            velocity += w2 * offset + w3 * offset_velocity
        return position, velocity

    def ahead(self, inputs, dt):
        """Where the toes will be shown (L, K, 3) over the next K frames, ``dt`` apart, if
        no lock switches meanwhile and the animated toes go through ``inputs`` (L, K, 3):
        a toe still blending after a switch reaches its target only when the blend has run
        out, so a released foot crosses ground its animation does not."""
        legs, count = inputs.shape[:2]
        time = (self.time[:, None] + dt * np.arange(1, count + 1)).reshape(-1)
        offset, _ = self._decayed(time, np.repeat(self.offset_position, count, axis=0),
                                  np.repeat(self.offset_velocity, count, axis=0))
        targets = np.where(self.locked[:, None, None], self.contact[:, None], inputs)
        return targets + offset.reshape(legs, count, 3)

    def blending(self):
        """(L,) whether each toe is still easing from its last switch toward its target."""
        return self.time < self.settings.blend_time

    def _carry(self, carry):
        """Move every lock held on moving ground as that ground moved: it holds relative to
        the ground under it, not to the world."""
        carried = self.locked & (self.carrier >= 0)
        if carry is not None and carried.any():
            self.contact[carried] = carry(self.carrier[carried], self.contact[carried])

    def _targets(self):
        locked = self.locked[:, None]
        return (np.where(locked, self.contact, self.input_position),
                np.where(locked, 0.0, self.input_velocity))

    def _update_planted(self, contacts):
        if contacts is not None:
            self.planted = np.asarray(contacts, dtype=float) > 0.5
            return
        speed = np.linalg.norm(self.input_velocity, axis=-1) / self.scale
        self.planted = np.where(self.planted, speed <= self.settings.lift_speed,
                                speed < self.settings.plant_speed)

    def _switch_locks(self, contact_heights, carriers, contact_shifts, reachable):
        s = self.settings
        distance = np.linalg.norm(self.position - self.input_position, axis=-1) / self.scale
        # A lock lets go when its animation has run away from where it set down, not from
        # where it was placed (off a step edge: that shift is no lag).
        behind = np.linalg.norm(self.position - self.placement - self.input_position, axis=-1) / self.scale
        lock = ~self.locked & self.planted & (distance < s.lock_distance)
        ran_away = behind > s.unlock_distance
        if reachable is not None:
            ran_away &= ~np.asarray(reachable, dtype=bool)
        unlock = self.locked & (~self.planted | ran_away)
        switched = lock | unlock
        if not switched.any():
            return
        self.contact[lock] = self._contact_points(contact_heights, contact_shifts)[lock]
        self.placement[lock] = 0.0 if contact_shifts is None else np.asarray(contact_shifts)[lock]
        self.placement[unlock] = 0.0
        self.carrier[lock] = -1 if carriers is None else np.asarray(carriers)[lock]
        self.locked ^= switched
        # InertializeCubicTransition from what is displayed now (not from the old
        # target): an unfinished catch-up carries over, so a re-plant eases in.
        target, target_velocity = self._targets()
        self.offset_position[switched] = (self.position - target)[switched]
        self.offset_velocity[switched] = (self.velocity - target_velocity)[switched]
        # A release eases out the position gap only and leaves with the animation's velocity:
        # the zero velocity of a locked foot is the lock's, not the foot's. Carried over, it
        # makes a foot lifting off lag behind its animation just where its leg is at full
        # reach, and the pelvis drops for it (5.5 mm on a clean walk, 1.6 mm without).
        self.offset_velocity[unlock] = 0.0
        self.time[switched] = 0.0

    def _contact_points(self, contact_heights, contact_shifts):
        points = self.input_position if contact_shifts is None else self.input_position + contact_shifts
        if contact_heights is None:
            return points.copy()
        heights = points @ self.up
        wanted = np.asarray(contact_heights, dtype=float)
        wanted = np.where(np.isfinite(wanted), wanted, heights)
        return points + (wanted - heights)[:, None] * self.up


class StillGround:
    """Ground that is the same on every frame, from a ray cast ``cast(origins, distance)``
    -> (heights (k,), normals (k, 3), hits (k,)): the runtime lock's ground protocol with
    nothing on it that moves, so no ray has a carrier and nothing is carried."""

    def __init__(self, cast):
        self.cast = cast

    def __call__(self, origins, distance):
        """Heights, normals, hits and carriers (k,), all -1 (still ground)."""
        heights, normals, hits = self.cast(origins, distance)
        return heights, normals, hits, np.full(len(origins), -1)

    def at(self, frame):
        """The ground on ``frame``: the same ground."""
        return self

    def carry(self, carriers, points):
        """Points held on still ground stay where they are."""
        return points


def _decay_weights(time, blend_time):
    """Weights (L, 1) of the cubic that takes an offset and its velocity to zero in ``blend_time`` (or (L,))."""
    blend = np.broadcast_to(np.maximum(blend_time, 1e-8), np.shape(time))
    t = np.clip(time / blend, 0.0, 1.0)[:, None]
    blend = blend[:, None]
    return (
        2.0 * t**3 - 3.0 * t**2 + 1.0,
        (t**3 - 2.0 * t**2 + t) * blend,
        (6.0 * t**2 - 6.0 * t) / blend,
        3.0 * t**2 - 4.0 * t + 1.0,
    )


def path_window(fps, window=SWING_WINDOW):
    """Frame offsets (S,) at which the ground is sampled along a walker's path, every frame
    from ``window / 3`` seconds before the current frame to ``window`` after it, and the
    tent weights (S,) of :func:`eased_ground`: 1 at the current frame, falling linearly
    toward the window's ends. The window behind is shorter: a foot going down a step lands
    soon after it has passed the edge."""
    reach = max(1, round(window * fps))
    behind = max(1, round(window * fps / 3.0))
    offsets = np.arange(-behind, reach + 1)
    return offsets, 1.0 - np.abs(offsets) / (np.where(offsets < 0, behind, reach) + 1.0)


def placement_shifts(heels, toes, ground_heights, tolerance, up=(0.0, 0.0, 1.0)):
    """Where k feet setting down land clear of step edges: shifts (k, 3) across the ground
    and the ground's height at each toe so placed (k,).

    Each foot runs from its toe (k, 3) to its heel, wherever the heel will be while the toe
    is planted (``heels`` (k, H, 3), the first now: a foot that turns on its toe sweeps its
    heel round). It straddles an edge where the ground under it, at ``FOOT_SAMPLES``
    points, is further than ``tolerance`` from the straight line between its ends (a ramp
    is straight, a step is not): its heel would be held up by a higher tread while the toe
    is pinned on a lower one, or the toe pushed into a riser. It is moved along itself (as
    it is now), by the smallest shift up to its own length (forward first) that clears every
    edge with a shift step to spare. Where nothing is in the way the shift is zero; where
    no shift clears it, zero and the height NaN.
    ``ground_heights(points (m, 3))`` gives heights (m,) and whether each counts (m,).
    """
    up = np.asarray(up, dtype=float) / np.linalg.norm(up)
    foot = toes - heels[:, 0]
    foot = foot - (foot @ up)[:, None] * up
    along = np.linspace(0.0, 1.0, FOOT_SAMPLES)
    steps = np.arange(-PLACEMENT_STEPS, PLACEMENT_STEPS + 1)
    shift = steps / PLACEMENT_STEPS  # (J,) in foot lengths
    lines = heels[:, :, None] + along[:, None] * (toes[:, None, None] - heels[:, :, None])  # (k, H, N, 3)
    points = lines[:, None] + shift[None, :, None, None, None] * foot[:, None, None, None]  # (k, J, H, N, 3)
    heights, valid = _placement_ground(points, ground_heights, tolerance, along)
    line = heights[..., :1] + along * (heights[..., -1:] - heights[..., :1])
    clear = valid.all(axis=-1) & (np.abs(heights - line).max(axis=-1) <= tolerance)  # (k, J, H)
    # How long (in heel samples from now) each shift keeps the foot on one tread: where the
    # contact under way ends (a stance labelled across a hop, a turn or a slide) depends
    # on the labels, so a shift that clears the stance's start wins over none at all.
    lasting = np.cumprod(clear, axis=-1).sum(axis=-1)  # (k, J)
    outward = np.clip(np.arange(len(steps)) + np.sign(steps), 0, len(steps) - 1)
    spared = np.minimum(lasting, lasting[:, outward])  # ... and so long the next shift further out
    spared[:, PLACEMENT_STEPS] = lasting[:, PLACEMENT_STEPS]
    nearest = 2 * np.abs(steps) - (steps > 0)  # forward first
    best = np.argmin(nearest - spared * (2 * len(steps)), axis=1)  # longest clear, then nearest
    feet = np.arange(len(best))
    placed = spared[feet, best] > 0
    return (np.where(placed, shift[best], 0.0)[:, None] * foot,
            np.where(placed, heights[feet, best, 0, -1], np.nan))


def _placement_ground(points, ground_heights, tolerance, along):
    """Heights and validity (k, J, H, N) of the ground under the placement samples
    ``points`` (k, J, H, N, 3), cast only where they decide anything: a foot clear of every
    edge where it is (most set-downs, all on even ground) keeps its place whatever the
    other shifts find, so those are cast only for feet that straddle an edge; and each
    distinct point once (a heel that does not turn repeats its place over the stance)."""
    heights, valid = np.full(points.shape[:4], np.nan), np.zeros(points.shape[:4], dtype=bool)
    here = points.shape[1] // 2

    def cast(selected):
        unique, inverse = np.unique(selected.reshape(-1, 3), axis=0, return_inverse=True)
        found, counts = ground_heights(unique)
        inverse = inverse.reshape(-1)
        return found[inverse].reshape(selected.shape[:-1]), np.asarray(counts)[inverse].reshape(selected.shape[:-1])

    heights[:, here], valid[:, here] = cast(points[:, here])
    line = heights[:, here, :, :1] + along * (heights[:, here, :, -1:] - heights[:, here, :, :1])
    kept = (valid[:, here].all(axis=-1) & (np.abs(heights[:, here] - line).max(axis=-1) <= tolerance)).all(axis=-1)
    others = np.flatnonzero(~kept)
    if len(others):
        moved = np.arange(points.shape[1]) != here
        found, counts = cast(points[others][:, moved])
        heights[others[:, None], np.flatnonzero(moved)], valid[others[:, None], np.flatnonzero(moved)] = found, counts
    return heights, valid


def eased_ground(heights, valid, fallback, weights):
    """Ground height (W,) for each of W walkers from samples (W, S) along its path.

    ``heights`` (W, S): ground hit at each sample, ``valid`` (W, S): where it counts,
    ``fallback`` (W,): the ground where a sample does not count. Each rise between two
    samples ahead (or fall between two behind) lifts the result by its height times the
    far sample's tent weight, so a step edge raises a walker gradually as it comes nearer
    and lets it down gradually once passed; ground lower than here never pulls it down
    early. The rises add up along the path (the highest sum counts): a walker whose window
    spans two steps has the further one eased in on top of the nearer one, and does not
    jump by part of its rise as it crosses the nearer edge.
    """
    heights = np.where(valid, heights, np.asarray(fallback, dtype=float)[:, None])
    centre = int(np.argmax(weights))
    change = np.diff(heights, axis=1)  # (W, S - 1): from each sample to the next
    ahead = np.cumsum(weights[centre + 1 :] * change[:, centre:], axis=1)
    behind = np.cumsum((-weights[:centre] * change[:, :centre])[:, ::-1], axis=1)
    lift = np.max(np.concatenate((ahead, behind), axis=1), axis=1, initial=0.0)
    return heights[:, centre] + lift


class _PelvisCorrection:
    """A correction of the pelvis, smoothed over time: it goes further as fast as the feet
    need (easing toward what is needed with ``time_constant`` seconds) and comes back on a
    critically damped spring of ``return_time`` seconds, never past what they need. The
    spring carries the correction's velocity over: a foot letting go while the pelvis is
    still going down slows it and brings it back in a curve, the same in seconds at any
    frame rate, instead of reversing it within a frame."""

    def __init__(self, time_constant, return_time, up):
        self.time_constant = time_constant
        self.return_time = return_time
        self.up = np.asarray(up, dtype=float) / np.linalg.norm(up)
        self.reset()

    def reset(self):
        self.value = None
        self.velocity = None

    def _eased(self, needed, dt):
        """The correction ``dt`` seconds on, toward ``needed``; a jump (no history, or dt
        not a positive time) snaps to it."""
        if self.value is None or not (np.isfinite(dt) and dt > 0.0):
            self.value, self.velocity = needed, np.zeros_like(needed)
            return self.value
        value = self.value
        if np.linalg.norm(needed) > np.linalg.norm(value):
            eased = _approach(value, needed, dt, self.time_constant)
        else:
            eased, velocity = _critically_damped(value, self.velocity, needed, dt, self.return_time)
            if np.linalg.norm(eased) >= np.linalg.norm(needed):
                self.value, self.velocity = eased, velocity
                return eased
            eased = needed  # the spring would come back further than the feet let it
        self.value, self.velocity = eased, (eased - value) / dt
        return eased


class PelvisDrop(_PelvisCorrection):
    """How far to lower the pelvis so every foot can reach its target, smoothed over time.

    Only ever lowers (never raises the pelvis above the animation), at most ``max_drop``
    (world units), easing down toward what is needed with ``time_constant`` seconds and
    back up on a critically damped spring of ``return_time`` seconds.
    """

    def __init__(self, time_constant, max_drop, up=(0.0, 0.0, 1.0),
                 return_time=RuntimeSettings.pelvis_return_smoothing):
        super().__init__(time_constant, return_time, up)
        self.max_drop = max_drop

    def update(self, hips, ankle_targets, reach, dt):
        """Drop (world units, >= 0) for hip joints (..., L, 3), ankle targets (..., L, 3) and
        reach (..., L): the largest any leg needs (several poses of the legs: the most any needs)."""
        needed = min(float(np.max(self._needed(hips, ankle_targets, reach), initial=0.0)), self.max_drop)
        return float(self._eased(needed, dt))

    def _needed(self, hips, ankle_targets, reach):
        """Per leg, the smallest lowering along ``up`` that brings the target within reach."""
        offset = np.asarray(hips, dtype=float) - ankle_targets
        height = offset @ self.up
        across = np.sum(offset * offset, axis=-1) - height**2
        # Too far out sideways for any drop: lowering to the target's height reaches furthest.
        vertical_reach = np.sqrt(np.maximum(np.square(reach) - across, 0.0))
        return np.maximum(height - vertical_reach, 0.0)


class PelvisPull(_PelvisCorrection):
    """How far to move the pelvis across the ground, toward the feet it cannot reach even
    lowered (a clip whose root runs ahead of its feet), smoothed over time.

    Zero wherever every foot is within reach; at most ``max_pull`` (world units), easing
    toward what is needed with ``time_constant`` seconds and back on a critically damped
    spring of ``return_time`` seconds.
    """

    def __init__(self, time_constant, max_pull, up=(0.0, 0.0, 1.0),
                 return_time=RuntimeSettings.pelvis_return_smoothing):
        super().__init__(time_constant, return_time, up)
        self.max_pull = max_pull

    def update(self, hips, ankle_targets, reach, dt):
        """Pull (3,) of the pelvis for hip joints (..., L, 3), ankle targets (..., L, 3) and reach (..., L)."""
        return self._eased(self._needed(np.asarray(hips, dtype=float), np.asarray(ankle_targets, dtype=float), reach),
                           dt)

    def _needed(self, hips, ankle_targets, reach):
        """The pull of the leg furthest out of reach: the shortest move across that brings its
        target within reach, capped."""
        offset = (ankle_targets - hips).reshape(-1, 3)
        reach = np.broadcast_to(reach, np.shape(hips)[:-1]).reshape(-1)
        height = offset @ self.up
        across = offset - height[:, None] * self.up
        distance = np.linalg.norm(across, axis=-1)
        short = np.maximum(distance - np.sqrt(np.maximum(np.square(reach) - height**2, 0.0)), 0.0)
        worst = int(np.argmax(short))
        if short[worst] <= 0.0:
            return np.zeros(3)
        return across[worst] / distance[worst] * min(short[worst], self.max_pull)


def align_to_normal(normals, max_tilt, up=(0.0, 0.0, 1.0)):
    """World-space rotations (L, 4), (w, x, y, z), turning ``up`` toward each ground normal.

    The tilt is limited to ``max_tilt`` radians. A normal facing down (a face hit from
    behind) describes the same ground and is flipped; a zero normal gives no tilt.
    """
    up = np.asarray(up, dtype=float) / np.linalg.norm(up)
    normals = np.asarray(normals, dtype=float)
    normals = np.where((normals @ up)[:, None] < 0.0, -normals, normals)
    axis = np.cross(up, normals)
    sine = np.linalg.norm(axis, axis=-1)
    angle = np.minimum(np.arctan2(sine, normals @ up), max_tilt)
    return quat.from_axis_angle(quat.normalize(axis), np.where(sine > 1e-12, angle, 0.0))


def root_follow(offset, target_offset, dt, time_constant):
    """The root's vertical offset eased toward the terrain under it (a step becomes a climb).

    ``target_offset``: terrain height under the root minus the clip's floor.
    """
    return _approach(offset, target_offset, dt, time_constant)


def _approach(current, target, dt, time_constant):
    """Exponential smoothing; a jump (dt <= 0 or not finite) has no history and snaps."""
    if not (np.isfinite(dt) and dt > 0.0) or time_constant <= 0.0:
        return target
    return target + (current - target) * math.exp(-dt / time_constant)


def _critically_damped(value, velocity, target, dt, time_constant):
    """A critically damped spring's value and velocity ``dt`` seconds on, toward a target
    held still: solved exactly, so any frame rate follows the same curve."""
    stiffness = 1.0 / max(time_constant, 1e-8)
    gap = value - target
    momentum = velocity + stiffness * gap
    decay = math.exp(-stiffness * dt)
    return target + (gap + momentum * dt) * decay, (velocity - stiffness * momentum * dt) * decay
