"""One frame of the runtime foot lock on terrain, as a game engine runs it (numpy only).

:class:`TerrainFootLock` turns the clip's pose at one frame into the displayed pose,
given the time since the previous call and the ground (the add-on raycasts the scene;
tests can pass any function). Per frame:

1. root follow: the character rises and falls with the ground along its pelvis' path,
   eased (a staircase becomes a climb, not a jolt), on top of the clip's own root motion;
2. terrain: each toe moves with the ground along its path and keeps its authored height
   above the clip's floor, so a foot lifted mid-stride stays lifted. The ground is sampled
   along the clip's path of the toe over the frames around this one (:func:`eased_ground`):
   a swinging toe rises before a step edge reaches it and comes down after it has passed,
   instead of clipping the edge or popping up;
3. foot lock (:class:`~.runtime_lock.FootLocker`) of the footprints under those toes,
   pinned on the ground where they were set down (moved along the foot onto one tread where
   it would straddle a step edge, :func:`~.runtime_lock.placement_shifts`, and moving
   with the ground where it moves); each toe keeps its authored clearance
   above its footprint, so a locked foot still rolls and lifts as authored;
4. each foot turned toward the ground normal under its toe and heel, tilt limited;
5. the pelvis lowered just enough for every foot to reach its target, and where even that
   is not enough (a clip whose root runs ahead of its feet), moved across toward the foot
   a little: as fast as the feet need, and back eased, its speed never jumping
   (:class:`~.runtime_lock.PelvisDrop`);
6. the legs solved by the core's leg solver (:func:`~.leg_ik.solve_leg`).

Steps 1-5 carry state from frame to frame (the eased root, the locks and their blends, the
eased normals and pelvis) and run one frame after the other; nothing in them reads the
solved legs. Step 6 keeps no state, so the legs of every frame are solved together
afterwards, each leg of each frame one row of the core's batched solver: :func:`play_clip`
runs the lock over the whole clip that way, as the add-on's Preview caches it, and
:meth:`TerrainFootLock.step` is the same with a single frame. Where no ray hits (no ground
mesh at all, or a foot off its edge), the clip's own floor is the ground: the feet still
lock, terrain only moves where they plant.
"""

import math
from dataclasses import dataclass, replace

import numpy as np

from . import quaternion as quat
from .foot_lock import FootLockSettings, leg_length
from .kinematics import Pose, Skeleton, check_motion, forward_kinematics
from .leg_ik import LegLimits, leg_chain, measure_legs, solve_leg
from .rig import Leg, Rig
from .runtime_lock import (
    HEEL_SPACING,
    STANCE_SAMPLES,
    STEP_EDGE,
    FootLocker,
    PelvisDrop,
    PelvisPull,
    RuntimeSettings,
    align_to_normal,
    eased_ground,
    length_scale,
    path_window,
    placement_shifts,
    root_follow,
)

# Time constant (seconds) of the ground normal under each foot.
NORMAL_SMOOTHING = 0.03
# Time constant (seconds) of the pelvis going down on terrain, much shorter than the root's:
# on stairs the body climbs while the back foot is still planted a step below, and a pelvis
# lagging behind would drag that foot. It comes back up eased over the longer
# ``RuntimeSettings.pelvis_return_smoothing``: a late rise never drags a foot.
PELVIS_DROP_SMOOTHING = 0.03


@dataclass
class RuntimeClip:
    """A clip as the runtime lock reads it: every frame's local and global pose, the legs."""

    skeleton: Skeleton
    rot: np.ndarray  # (F, n, 4) local rotations
    pos: np.ndarray  # (F, n, 3) local translations
    grot: np.ndarray  # (F, n, 4) global rotations
    gpos: np.ndarray  # (F, n, 3) global positions
    rig: Rig
    limits: list[LegLimits]  # per leg
    leg_length: float
    fps: float
    floor: float  # height along ``up`` of the ground the clip was authored on
    contacts: np.ndarray | None  # (L, F) contact curves; None decides by the toes' speed

    @property
    def frames(self):
        return self.rot.shape[0]


def runtime_clip(skeleton, motion, rig, floor, contacts=None, up=(0.0, 0.0, 1.0), softening_ratio=0.02):
    """Everything :class:`TerrainFootLock` reads, computed once for the whole clip."""
    check_motion(skeleton, motion)
    grot, gpos = forward_kinematics(skeleton, motion.rot, motion.pos, preview_joints(skeleton, rig))
    limits = measure_legs(grot, gpos, rig.legs, up, softening_ratio)
    return RuntimeClip(skeleton, motion.rot, motion.pos, grot, gpos, rig, limits, leg_length(gpos, rig),
                       motion.fps, float(floor), contacts)


def preview_joints(skeleton, rig):
    """Joints the runtime lock may change: the pelvis and every leg chain from its hip down."""
    return sorted({rig.pelvis}.union(*(leg_chain(skeleton, leg) for leg in rig.legs)))


@dataclass
class FrameResult:
    """One displayed frame: the solved pose and what the viewport overlay draws."""

    rot: np.ndarray  # (n, 4) solved local rotations
    pos: np.ndarray  # (n, 3) solved local translations
    toe_inputs: np.ndarray  # (L, 3) toes on the terrain, before locking
    toes: np.ndarray  # (L, 3) displayed toes
    contacts: np.ndarray  # (K, 3) points the locked toes are pinned to


@dataclass
class _FeetSample:
    toe_inputs: np.ndarray  # (L, 3) animated toes on the (eased) terrain
    clearance: np.ndarray  # (L,) authored height of each toe above the clip's floor
    ground_under: np.ndarray  # (L,) ground right under each animated toe, NaN where none
    carrier_under: np.ndarray  # (L,) the moving ground there (-1: still ground or none)


@dataclass
class _GroundUnderFeet:
    toe_shift: np.ndarray  # (L,) how far the ground under each toe target is from the floor (the lift where none)
    heel_shift: np.ndarray  # (L,) the same under each heel
    normals: np.ndarray  # (L, 3) eased ground normal under each foot, NaN where none


class TerrainFootLock:
    """Streaming foot lock of one character on terrain: call :meth:`step` once per frame.

    ``ground(origins, distance)`` casts a ray from each origin (k, 3) against ``up`` for at
    most ``distance`` and returns hit heights along ``up`` (k,), normals (k, 3), hits
    (k,) bool and each ray's carrier (k,), the index of the moving object it hit (-1:
    still ground). ``ground.carry(carriers, points)`` moves points (k, 3) held on each
    carrier as it moved since the frame before (a foot locked on it moves with it), and
    ``ground.at(frame)`` is the ground on that frame (:class:`StillGround` for ground
    that never moves; ``adapters.terrain`` for the scene's). ``solver`` supplies the leg
    solver's options (:class:`FootLockSettings`).
    """

    def __init__(self, clip, settings=None, solver=None, root_follow=True, up=(0.0, 0.0, 1.0)):
        self.clip = clip
        self.settings = settings or RuntimeSettings(pelvis_drop_smoothing=PELVIS_DROP_SMOOTHING)
        self.solver = solver or FootLockSettings()
        self.root_follow = root_follow
        self.up = np.asarray(up, dtype=float) / np.linalg.norm(up)
        self.groups = _leg_groups(clip)
        self.toe_joints = [leg.toe for leg in clip.rig.legs]
        self.hips = clip.gpos[:, [leg.hip for leg in clip.rig.legs]]  # (F, L, 3), as authored
        self.ankles = clip.gpos[:, [leg.ankle for leg in clip.rig.legs]]
        self.toes = clip.gpos[:, self.toe_joints]
        self.reach = np.stack([lim.max_extension - lim.softening for lim in clip.limits])  # (L, F)
        # Like every threshold, the ledge limit is for an adult: scaled to this character.
        self.max_correction = self.settings.max_correction * length_scale(clip.leg_length)
        self.window, self.window_weights = path_window(clip.fps)
        self.pelvis_ahead = _frames_ahead(clip, round(self.settings.pelvis_drop_smoothing * clip.fps))
        self.locker = FootLocker(clip.leg_length, self.settings, self.up)
        self.pelvis = PelvisDrop(self.settings.pelvis_drop_smoothing,
                                 self.settings.max_pelvis_drop * clip.leg_length, self.up,
                                 self.settings.pelvis_return_smoothing)
        self.pull = PelvisPull(self.settings.pelvis_drop_smoothing,
                               self.settings.max_pelvis_pull * clip.leg_length, self.up,
                               self.settings.pelvis_return_smoothing)
        self.stances = _Stances.of(clip.contacts, math.ceil(self.settings.blend_time * clip.fps))
        self.reset()

    def reset(self):
        """Forget all history: the next step starts from the clip as it is."""
        self.locker.reset()
        self.pelvis.reset()
        self.pull.reset()
        self.lift = None  # root offset along up
        self.lift_target = 0.0
        self.normals = None
        self.clamps = None  # (2, L) ground clamps under the toes and heels, eased down
        self.released_ground = None  # (L,) ground under the toe targets, eased down
        self.shown_targets = None  # (L, 3) the toe targets of the frame before
        self.held_back = None  # (L,) how far those were held back from where the lock put them
        self.lock_targets = None  # (L, 3) where the lock put the toes the frame before
        self.placed = {}  # (leg, stance) -> where that stance is set down, moved from its toe (3,)

    def step(self, frame, dt, ground):
        """The displayed pose at clip frame index ``frame``, ``dt`` seconds after the last one.

        A ``dt`` that is not a small positive step (a jump, scrubbing backward) restarts.
        """
        plan = self.plan(frame, dt, ground)
        rot, pos, toes = self.solve([plan])
        return FrameResult(rot[0], pos[0], plan.toe_inputs, toes[0], plan.contacts)

    def plan(self, frame, dt, ground):
        """Steps 1-5 of one frame, in order: everything the leg solve of ``frame`` needs."""
        if not (np.isfinite(dt) and 0.0 < dt <= self.settings.max_step):
            self.reset()
            dt = 0.0  # every smoother snaps, the locker restarts from its input
        paths = self._cast_paths(frame, ground)
        lift = self._follow_root(paths, dt)
        feet = self._placed_ahead(self._sample_feet(frame, paths, lift), frame, ground)
        targets = self._lock(feet, frame, dt, ground, lift)
        legs = _LegPoints(self.hips[frame], self.ankles[frame], self.toes[frame])
        under = self._ground_under_feet(legs, targets, lift, dt, ground)
        turns = self._foot_turns(under.normals)
        legs = legs.turned(turns)
        needs = self._legs_ahead(legs, frame)
        shift = (lift - self._pelvis_drop(needs, lift, targets, dt)) * self.up
        shift = shift + self._pelvis_pull(needs, shift, targets, dt)
        return _FramePlan(frame, targets, under.toe_shift, under.heel_shift, turns, shift, feet.toe_inputs,
                          self.locker.contact[self.locker.locked].copy())

    def solve(self, plans):
        """Step 6 for the frames of ``plans`` at once: (rot (N, n, 4), pos (N, n, 3), toes (N, L, 3))."""
        c = self.clip
        frames = np.array([plan.frame for plan in plans])
        targets = np.stack([plan.targets for plan in plans])
        turned = np.array([plan.turns is not None for plan in plans])
        still = np.tile(quat.IDENTITY, (len(self.toe_joints), 1))
        turns = np.stack([still if plan.turns is None else plan.turns for plan in plans])
        shift = np.stack([plan.shift for plan in plans])
        toe_shift = np.stack([plan.toe_shift for plan in plans])
        heel_shift = np.stack([plan.heel_shift for plan in plans])
        rot, pos = c.rot[frames], c.pos[frames]
        toes = np.empty_like(targets)
        for group in self.groups:
            pose = _GroupPose(group, c, frames)
            pose.turn_feet(turns, turned)
            pose.translate(shift)
            pose.solve(targets, toe_shift, heel_shift, self.up, self.solver)
            solved = pose.rows()
            rot[:, group.joints[:, 1:]] = solved.rot[:, :, 1:]
            toes[:, group.legs] = solved.gpos[:, :, group.leg.toe]
        parent = c.skeleton.parents[c.rig.pelvis]
        pos[:, c.rig.pelvis] += shift if parent < 0 else quat.rotate(quat.conjugate(c.grot[frames, parent]), shift)
        return rot, pos, toes

    def _lock(self, feet, frame, dt, ground, lift):
        """Toe targets (L, 3): the footprints under the toes locked, each toe at its
        authored clearance above its footprint (held on moving ground as it moves; set
        down clear of step edges)."""
        contacts = None if self.clip.contacts is None else self.clip.contacts[:, frame]
        clearance = feet.clearance[:, None] * self.up
        shifts, heights = self._place_feet(feet, frame, contacts, ground, lift)
        reachable = None if contacts is None else self._locks_in_reach(frame, lift, clearance)
        footprints = self.locker.update(feet.toe_inputs - clearance, dt, contacts, heights, feet.carrier_under,
                                        ground.carry, shifts, reachable)
        locked_targets, before = footprints + clearance, self.lock_targets
        self.lock_targets = locked_targets
        moved = None if before is None else np.linalg.norm(locked_targets - before, axis=-1)
        targets, under = self._released_clear_of_ground(locked_targets, feet, frame, dt, ground, lift)
        return self._released_steps_limited(targets, moved, under + 0.5 * feet.clearance)

    def _locks_in_reach(self, frame, lift, clearance):
        """(L,) whether each leg could reach its lock (held at its clearance above it) this
        frame with the pelvis lowered and moved across toward it as far as they may go
        (None before the first frame). With contact curves (or the bake's labels) a lock
        holds on while this is so: a clip whose root runs ahead of its feet leaves a long
        stance's lock further behind than ``unlock_distance`` (the hop with its root 1.25x
        too fast: 24 cm), and letting go mid-stance would step the foot forward, across a
        step edge or not, while the clip still plants it."""
        locker, up = self.locker, self.up
        if locker.position is None:
            return None
        ankles = locker.contact + clearance + self.ankles[frame] - self.toes[frame]
        offset = ankles - (self.hips[frame] + lift * up)
        below = np.maximum(-(offset @ up) - self.pelvis.max_drop, 0.0)
        across = np.maximum(np.linalg.norm(offset - (offset @ up)[:, None] * up, axis=-1) - self.pull.max_pull, 0.0)
        return np.hypot(across, below) <= self.reach[:, frame]

    def _released_steps_limited(self, targets, moved, lowest):
        """Targets (L, 3) of released toes moving no further in a frame, up or down and
        across, than the lock moved them (``moved`` (L,): the animation's step, its toe
        lifting included, plus what the release's blend adds now; None: a restart), plus
        what this limit held back, caught up as a blend would: a toe the ground ahead
        lifts is lifted as gently as its blend moves it, never a step's height in a frame.
        Where going on across would take a toe over ground higher than it may be there
        (``lowest`` (L,): half its clearance above the ground under its target; NaN: no
        ground), it rises first and crosses once it is high enough: a toe released at the
        foot of a riser does not cross the edge inside it. Locked toes are the lock's: it
        eases them in itself."""
        previous, behind = self.shown_targets, self.held_back
        self.shown_targets, self.held_back = targets, np.zeros(len(targets))
        if previous is None or moved is None:
            return targets
        up, dt = self.up, 1.0 / self.clip.fps
        allowed = moved + 1.5 * behind * dt / self.settings.blend_time
        move = targets - previous
        rise = np.clip(move @ up, -allowed, allowed)
        across = move - (move @ up)[:, None] * up
        across *= np.minimum(1.0, allowed / np.maximum(np.linalg.norm(across, axis=-1), 1e-12))[:, None]
        risen = previous @ up + rise
        across = np.where((risen < lowest)[:, None], 0.0, across)
        limited = np.where(self.locker.locked[:, None], targets, previous + rise[:, None] * up + across)
        self.shown_targets, self.held_back = limited, np.linalg.norm(targets - limited, axis=-1)
        return limited

    def _released_clear_of_ground(self, targets, feet, frame, dt, ground, lift):
        """Targets (L, 3), and the ground under them (L,) (NaN: none), with every released
        toe kept its authored clearance above the
        ground under it: a foot blending back to an animation that slid ahead crosses
        ground the animation does not (down stairs, over the upper tread while the
        animation's toe, lowered for the step ahead, is past the edge; up stairs, a riser
        the animation's toe has already cleared), and the blend must not pass through it.
        The toe is held over the ground it was released on and any lower it has crossed
        since: ground falling away under it (past the edge) lets it down eased, as the
        ground clamps do, not in one frame. Ground rising along the path it will blend
        along (:meth:`_ground_ahead_of_blends`) raises it gradually before it gets there,
        as the swing's eased ground does (held up to a higher tread only when over it, it
        would jump a step's height in a frame)."""
        up, locked = self.up, self.locker.locked
        heights, _, hit, _ = self._cast(targets, ground)
        under = np.where(hit, heights, np.nan)
        held = under if self.released_ground is None else np.where(locked, under, self.released_ground)
        self.released_ground = np.where(under > held, held, np.maximum(_ease(held, under, dt), under))
        ground_ahead = self._ground_ahead_of_blends(targets, under, feet, frame, dt, ground, lift)
        lowest = np.fmax(self.released_ground, ground_ahead) + feet.clearance
        lowest = np.where(np.isfinite(lowest) & ~locked, lowest, -np.inf)
        return targets + np.maximum(lowest - targets @ up, 0.0)[:, None] * up, under

    def _ground_ahead_of_blends(self, targets, under, feet, frame, dt, ground, lift):
        """(L,) the eased ground (:func:`eased_ground`) along where each released toe still
        blending toward its animation will be over the swing window ahead
        (:meth:`~.runtime_lock.FootLocker.ahead`); NaN for the others, whose toes follow
        their animation (and its eased ground) or their lock."""
        blending = ~self.locker.locked & self.locker.blending()
        eased = np.full(len(targets), np.nan)
        if dt <= 0.0 or not blending.any():
            return eased
        c, up = self.clip, self.up
        ahead = self.window >= 0
        frames = np.clip(frame + self.window[ahead][1:], 0, c.frames - 1)
        legs = np.flatnonzero(blending)
        # The animated footprints ahead: the clip's toes moved as the terrain moved them now.
        footprints = feet.toe_inputs - feet.clearance[:, None] * up
        inputs = footprints[:, None] + (self.toes[frames] - self.toes[frame]).transpose(1, 0, 2)
        path = self.locker.ahead(inputs, dt)[legs]
        heights, _, hit, _ = self._cast(path.reshape(-1, 3), ground)
        base = c.floor + lift
        here = np.where(np.isfinite(under[legs]), under[legs], base)
        samples = np.concatenate((here[:, None], heights.reshape(len(legs), -1)), axis=1)
        valid = np.concatenate((np.ones((len(legs), 1), dtype=bool), hit.reshape(len(legs), -1)), axis=1)
        eased[legs] = eased_ground(samples, valid, here, self.window_weights[ahead])
        return eased

    def _place_feet(self, feet, frame, contacts, ground, lift):
        """Shifts (L, 3) and ground heights (L,) of the footprints of feet that may lock
        now, moved off any step edge under the foot (:func:`placement_shifts`)."""
        locker, c = self.locker, self.clip
        setting_down = np.ones(len(self.toe_joints), dtype=bool) if locker.position is None else ~locker.locked
        if contacts is not None:
            setting_down &= np.asarray(contacts) > 0.5
        shifts, heights = np.zeros((len(self.toe_joints), 3)), feet.ground_under.copy()
        if not setting_down.any():
            return shifts, heights

        def ground_heights(points):
            found, _, hit, _ = self._cast(points, ground)
            return found, hit

        toes = feet.toe_inputs[setting_down]
        ahead = self._stance_ahead(frame, np.flatnonzero(setting_down))  # (k, H)
        legs = np.flatnonzero(setting_down)[:, None]
        heels = toes[:, None] + self.ankles[ahead, legs] - self.toes[ahead, legs]
        moved, placed = placement_shifts(heels, toes, ground_heights, STEP_EDGE * length_scale(c.leg_length), self.up)
        shifts[setting_down] = moved
        heights[setting_down] = np.where(np.isfinite(placed), placed, heights[setting_down])
        return shifts, heights

    def _placed_ahead(self, feet, frame, ground):
        """``feet`` with each animated toe moved across the ground toward where its coming
        stance will be set down (clear of a step edge, :func:`placement_shifts`): eased in
        over the blend time before it lands, held through the stance, eased out after it
        lifts. The lock then pins a foot where it lands; moved there only as it locked, the
        planted foot would glide the few centimetres of the move over the blend. Needs
        contact curves (the stances ahead)."""
        if not self.stances.starts:
            return feet
        weights = self.stances.weight[frame]  # (L, 2): the last stance started, the next
        active = np.argwhere(weights > 0.0)
        if not len(active):
            return feet
        shifts = np.zeros((len(self.toe_joints), 3))
        for leg, which in active:
            stance = self.stances.index[frame, leg, which]
            shifts[leg] += weights[leg, which] * self._stance_placement(feet, frame, ground, leg, stance)
        return replace(feet, toe_inputs=feet.toe_inputs + shifts)

    def _stance_placement(self, feet, frame, ground, leg, stance):
        """Where the ``stance`` of ``leg`` (an index into :attr:`stances`) is set down, moved
        from its toe (3,): found once, from the frame it is first needed, with the toe where
        the clip puts it when it lands, moved with the terrain as it is now."""
        key = (leg, stance)
        if key not in self.placed:
            start = int(self.stances.starts[leg][stance])
            toe = feet.toe_inputs[leg] + self.toes[start, leg] - self.toes[frame, leg]
            heels = toe + self.ankles[self._stance_ahead(start, np.array([leg]))[0], leg] - self.toes[start, leg]

            def ground_heights(points):
                found, _, hit, _ = self._cast(points, ground)
                return found, hit

            shift, _ = placement_shifts(heels[None], toe[None], ground_heights,
                                        STEP_EDGE * length_scale(self.clip.leg_length), self.up)
            self.placed[key] = shift[0]
        return self.placed[key]

    def _stance_ahead(self, frame, legs):
        """(k, STANCE_SAMPLES) frames from ``frame`` to the end of each leg's contact under way
        at which the heel is checked: each the first after the heel (as it turns about the
        toe) has moved another ``HEEL_SPACING`` (or more, over a long sweep) since ``frame``,
        so a heel sweeping over an edge is caught within that wherever the labelled stance
        starts and ends; the last repeats where there are fewer (all ``frame`` without
        contact curves)."""
        contacts = self.clip.contacts
        if contacts is None:
            return np.full((len(legs), STANCE_SAMPLES), frame)
        lifted = contacts[legs, frame:] <= 0.5
        last = frame + np.maximum(np.where(lifted.any(axis=1), np.argmax(lifted, axis=1), lifted.shape[1]) - 1, 0)
        frames = np.minimum(frame + np.arange(last.max() - frame + 1), last[:, None])  # (k, T)
        heels = self.ankles[frames, legs[:, None]] - self.toes[frames, legs[:, None]]
        path = np.concatenate((np.zeros((len(legs), 1)),
                               np.cumsum(np.linalg.norm(np.diff(heels, axis=1), axis=-1), axis=1)), axis=1)
        # Spread wider only where STANCE_SAMPLES would not reach the stance's end.
        spacing = np.maximum(HEEL_SPACING * length_scale(self.clip.leg_length), path[:, -1:] / (STANCE_SAMPLES - 1))
        reached = np.floor(path / spacing)  # (k, T), rising
        samples = np.minimum(np.arange(STANCE_SAMPLES), reached[:, -1:])  # (k, S)
        return np.take_along_axis(frames, np.argmax(reached[:, None] >= samples[..., None], axis=-1), axis=1)

    def _cast(self, points, ground):
        """(heights, normals, hits, carriers) of rays down through ``points`` (k, 3), from
        ``max_correction`` above the character's current ground, or above its highest
        planted foot where that is higher, to as far below the current ground. Only ground
        within that span counts as a hit: further is a ledge or a bad hit (a ground function
        may answer beyond the ray's length). On stairs the body stays down while a foot is
        planted a step below: measured from the body alone, a stride climbing a step and
        more would land beyond reach (a ray starting inside the step above)."""
        up = self.up
        base = self.clip.floor + (0.0 if self.lift is None else self.lift)
        top = max(base, self._highest_footprint())
        origins = points + (top + self.max_correction - points @ up)[:, None] * up
        heights, normals, hits, carriers = ground(origins, top - base + 2.0 * self.max_correction)
        return heights, normals, hits & (heights >= base - self.max_correction) & (heights <= top + self.max_correction), carriers

    def _highest_footprint(self):
        """Height along up of the highest locked footprint (minus infinity when none is)."""
        locker = self.locker
        if locker.position is None or not locker.locked.any():
            return -math.inf
        return float(np.max(locker.contact[locker.locked] @ self.up))

    def _cast_paths(self, frame, ground):
        """Ground heights, hits and carriers (1 + L, S) along the clip's paths of the pelvis
        and of every toe over the window around ``frame``, then (with contact curves) of
        every ankle (on moving ground: where it is now)."""
        c = self.clip
        path = np.clip(frame + self.window, 0, c.frames - 1)
        walkers = [c.rig.pelvis, *self.toe_joints]
        if c.contacts is not None:
            walkers += [leg.ankle for leg in c.rig.legs]
        heights, _, hit, carriers = self._cast(c.gpos[path][:, walkers].transpose(1, 0, 2).reshape(-1, 3), ground)
        shape = (len(walkers), len(path))
        return heights.reshape(shape), hit.reshape(shape), carriers.reshape(shape)

    def _follow_root(self, paths, dt):
        """The root's offset along up, eased toward the ground along the pelvis' path."""
        if not self.root_follow:
            return 0.0
        s, floor = self.settings, self.clip.floor
        lift = 0.0 if self.lift is None else self.lift
        heights, valid, _ = paths
        # The tent-weighted mean ground along the path: the body starts to climb (or go
        # down) before the step and ends after it, as symmetric as the step is. Where no
        # ground counts (a ledge, a hole, none at all) the body keeps going toward the last
        # ground it had.
        ahead = np.where(valid[0], heights[0], floor + self.lift_target)
        target = float(ahead @ self.window_weights / self.window_weights.sum())
        # Never above the lowest planted foot: on stairs the body stays down with the
        # foot still planted a step below (its leg could not reach it otherwise) and
        # rises once that foot has lifted.
        self.lift_target = min(target, self._lowest_footprint()) - floor
        self.lift = float(root_follow(lift, self.lift_target, dt, s.root_follow_smoothing))
        return self.lift

    def _lowest_footprint(self):
        """Height along up of the lowest locked footprint (infinite when none is locked)."""
        locker = self.locker
        if locker.position is None or not locker.locked.any():
            return math.inf
        return float(np.min(locker.contact[locker.locked] @ self.up))

    def _sample_feet(self, frame, paths, lift):
        """Each toe on the ground along its path and its ankle's, kept at its authored clearance."""
        c, up = self.clip, self.up
        heights, valid = paths[0][1:], paths[1][1:]
        base = c.floor + lift
        # A ledge or a bad hit, like no ground at all, leaves the toe on the clip's floor.
        # With contact curves, a foot going down a step stays up until its heel has passed
        # the edge too: a toe let down while the heel is still over the upper tread would be
        # held up by the heel's ground clamp and pulled back into the edge; where it sets
        # down it is placed on one tread (_place_feet). Without curves the lock plants a
        # foot by its toe's speed, where the toe is: it must be on its own ground.
        legs = len(self.toe_joints)
        eased = eased_ground(heights, valid, np.full(len(heights), base), self.window_weights)
        eased = eased.reshape(-1, legs).max(axis=0)  # over the toe's path (and the ankle's)
        heights, valid = heights[:legs], valid[:legs]
        centre = int(np.argmax(self.window_weights))
        authored = c.gpos[frame, self.toe_joints]
        return _FeetSample(
            toe_inputs=authored + (lift + eased - base)[:, None] * up,
            clearance=authored @ up - c.floor,
            ground_under=np.where(valid[:, centre], heights[:, centre], np.nan),
            carrier_under=np.where(valid[:, centre], paths[2][1 : 1 + legs, centre], -1),
        )

    def _ground_under_feet(self, legs, targets, lift, dt, ground):
        """The ground right under each foot where it is going: under the toe target and
        under the ankle moved along with it. The leg solver's ground clamps hold for it
        (the eased ground along the path is a target only), and the feet tilt to it."""
        c, up = self.clip, self.up
        ankles = targets + legs.ankles - legs.toes
        heights, normals, hit, _ = self._cast(np.concatenate((targets, ankles)), ground)
        toe, heel = np.where(hit, heights, np.nan).reshape(2, -1)
        toe_shift = np.where(np.isfinite(toe), toe - c.floor, lift)
        clamps = np.stack((toe_shift, np.where(np.isfinite(heel), heel - c.floor, toe_shift)))
        # Ground falling away under a foot (its toe or heel past a step edge) lets a foot it
        # held up down eased, not in one frame; ground rising under it holds it up at once.
        self.clamps = np.maximum(_ease(self.clamps, clamps, dt), clamps)
        self.normals = _ease(self.normals, _foot_normals(normals, hit, up), dt)
        return _GroundUnderFeet(toe_shift=self.clamps[0], heel_shift=self.clamps[1], normals=self.normals)

    def _foot_turns(self, normals):
        """World rotations (L, 4) turning each foot toward the ground normal under it
        (none where there is no ground), or None: no foot turns on flat ground (or stairs)."""
        tilted = np.isfinite(normals).all(axis=1) & (normals @ self.up < 1.0 - 1e-12)
        if not tilted.any():
            return None
        normals = np.where(tilted[:, None], normals, self.up)
        return align_to_normal(normals, self.settings.max_tilt, self.up)

    def _pelvis_drop(self, needs, lift, targets, dt):
        """How far the pelvis goes down for every (turned) foot to reach its target, with
        the legs now and a time constant ahead (``needs``, :meth:`_legs_ahead`)."""
        return self.pelvis.update(needs.hips + lift * self.up, targets + needs.feet, needs.reach, dt)

    def _pelvis_pull(self, needs, shift, targets, dt):
        """How far the (lowered) pelvis moves across for every foot to reach its target,
        now and a time constant ahead."""
        return self.pull.update(needs.hips + shift, targets + needs.feet, needs.reach, dt)

    def _legs_ahead(self, legs, frame):
        """The legs' :class:`_LegNeeds`, now and ``pelvis_drop_smoothing`` seconds ahead
        (within the contact under way; infinite reach for a toe not locked, whose target
        will move; a foot turned now, as authored ahead: a foot rolling onto its toe raises
        its ankle). The pelvis eases toward what its feet need; a need that grows steadily,
        as the body walks away from a foot locked behind it (down stairs, or the root running
        ahead of its feet), is caught only a time constant late, and the leg falls short of
        its lock on the last frames of the stance. Easing toward the need the locked foot
        will have then keeps up with it."""
        locked, ahead = self.locker.locked, self.pelvis_ahead[:, frame]
        legs_index = np.arange(len(ahead))
        hips = np.stack((legs.hips, self.hips[ahead, legs_index]))
        feet = np.stack((legs.ankles - legs.toes, self.ankles[ahead, legs_index] - self.toes[ahead, legs_index]))
        reach = np.stack((self.reach[:, frame], np.where(locked, self.reach[legs_index, ahead], np.inf)))
        return _LegNeeds(hips, feet, reach)


@dataclass
class _Stances:
    """Each leg's stances (runs of frames its contact curve is above 0.5) and, per frame,
    the two whose placement moves its toe then (:meth:`TerrainFootLock._placed_ahead`): the
    last to have started and the next, with their weights. The next one's rises smoothly
    from 0 ``ease`` frames before it starts to 1 as it does; the last one's is 1 through
    it, falls to 0 ``ease`` frames after its end, and never exceeds what the next one's
    leaves (after a swing shorter than twice ``ease`` the toe goes from one placement to the
    next, all the way by the time it lands)."""

    starts: list  # per leg (S,): each stance's first frame
    index: np.ndarray  # (F, L, 2) the last stance started and the next (-1: none)
    weight: np.ndarray  # (F, L, 2) their weights

    @classmethod
    def of(cls, contacts, ease):
        if contacts is None:
            return cls([], np.zeros((0, 0, 2), dtype=int), np.zeros((0, 0, 2)))
        planted = np.asarray(contacts) > 0.5
        legs, count = planted.shape
        frames, n = np.arange(count), max(ease, 1)
        index, weight = np.full((count, legs, 2), -1), np.zeros((count, legs, 2))
        starts = []
        for leg, row in enumerate(planted):
            edges = np.flatnonzero(np.diff(np.pad(row, 1).astype(np.int8)))  # starts and ends alternate
            first, after = edges[0::2], edges[1::2]
            starts.append(first)
            if not len(first):
                continue
            last = np.searchsorted(first, frames, side="right") - 1  # the last stance started by each frame
            upcoming = last + 1
            has_next = upcoming < len(first)
            rise = np.where(has_next, _smoothstep(np.clip(
                (frames - first[np.minimum(upcoming, len(first) - 1)] + n) / n, 0.0, 1.0)), 0.0)
            fall = np.where(last >= 0, _smoothstep(np.clip((after[last] - 1 + n - frames) / n, 0.0, 1.0)), 0.0)
            index[:, leg] = np.stack((last, np.where(has_next, upcoming, -1)), axis=1)
            weight[:, leg] = np.stack((np.minimum(fall, 1.0 - rise), rise), axis=1)
        return cls(starts, index, weight)


def _smoothstep(t):
    return t * t * (3.0 - 2.0 * t)


def _frames_ahead(clip, frames):
    """(L, F) the clip frame ``frames`` after each frame, or the last of the leg's contact
    under way there if that ends sooner (the frame itself where the leg is not in contact;
    without contact curves, only the clip's end limits it)."""
    index = np.arange(clip.frames)
    ahead = np.minimum(index + frames, clip.frames - 1)
    if clip.contacts is None:
        return np.tile(ahead, (len(clip.rig.legs), 1))
    contact = np.asarray(clip.contacts) > 0.5
    ends = contact & ~np.pad(contact[:, 1:], ((0, 0), (0, 1)))  # last frames of the contacts
    next_end = np.minimum.accumulate(np.where(ends, index, clip.frames)[:, ::-1], axis=1)[:, ::-1]
    return np.where(contact, np.minimum(ahead, next_end), index)


@dataclass
class _LegPoints:
    """(L, 3) world positions of every leg's hip, ankle and toe at one frame, as authored."""

    hips: np.ndarray
    ankles: np.ndarray
    toes: np.ndarray

    def turned(self, turns):
        """The feet turned about their ankles by world rotations ``turns`` (L, 4) (None: not turned)."""
        if turns is None:
            return self
        return _LegPoints(self.hips, self.ankles, self.ankles + quat.rotate(turns, self.toes - self.ankles))


@dataclass
class _LegNeeds:
    """What the pelvis eases toward, now (index 0) and a time constant ahead (index 1):
    the hips (2, L, 3), each foot from its toe to its ankle (2, L, 3) and the legs' reach (2, L)."""

    hips: np.ndarray
    feet: np.ndarray
    reach: np.ndarray


@dataclass
class _FramePlan:
    """What steps 1-5 decided for one frame: all the leg solve of that frame needs, and the overlay's points."""

    frame: int
    targets: np.ndarray  # (L, 3) toe targets
    toe_shift: np.ndarray  # (L,) the ground under each toe target from the clip's floor
    heel_shift: np.ndarray  # (L,) ... and under each heel
    turns: np.ndarray | None  # (L, 4) world rotations of the feet toward the ground; None: none turns
    shift: np.ndarray  # (3,) the pelvis' move
    toe_inputs: np.ndarray  # (L, 3) toes on the terrain, before locking
    contacts: np.ndarray  # (K, 3) points the locked toes are pinned to


@dataclass
class _LegGroup:
    """Legs of the same shape, solved together by the batched leg solver: each leg is one
    row ("frame") of a small skeleton running from the hip's parent to the toe tip."""

    legs: np.ndarray  # (G,) indices into the rig's legs
    joints: np.ndarray  # (G, m) clip joints: the hip's parent, then the leg chain
    skeleton: Skeleton  # m joints in a line
    leg: Leg  # the roles as indices along that line
    limits: LegLimits  # one row per leg; reach and softening (G, F)


def _leg_groups(clip):
    shapes = {}
    for index, leg in enumerate(clip.rig.legs):
        chain = leg_chain(clip.skeleton, leg)
        roles = tuple(None if j is None else chain.index(j) + 1
                      for j in (leg.hip, leg.knee, leg.ankle, leg.toe, leg.toe_end))
        joints = [clip.skeleton.parents[leg.hip], *chain]
        shapes.setdefault(roles, []).append((index, joints))
    return [_leg_group(clip, roles, members) for roles, members in shapes.items()]


def _leg_group(clip, roles, members):
    legs = np.array([index for index, _ in members])
    limits = [clip.limits[i] for i in legs]
    size = len(members[0][1])

    def stacked(field):
        return np.stack([getattr(lim, field) for lim in limits])

    return _LegGroup(
        legs=legs,
        joints=np.array([joints for _, joints in members]),
        skeleton=Skeleton([f"joint {k}" for k in range(size)], np.arange(-1, size - 1)),
        leg=Leg("group", *roles),
        limits=LegLimits(*(stacked(f) for f in ("max_extension", "softening", "knee_forward_local",
                                                "toe_min_height", "heel_min_height", "toe_end_min_height"))),
    )


class _GroupPose:
    """Frames of a leg group, one row per frame and leg (frame by frame: N * G rows of m
    joints), cut from the clip's pose. The small skeleton's root (the hip's parent) takes
    its global transform as its local one."""

    def __init__(self, group, clip, frames):
        self.group = group
        self.frames = frames  # (N,) clip frame indices
        joints = group.joints

        def cut(values):  # (F, n, k) -> (N * G, m, k)
            return values[frames[:, None, None], joints[None]].reshape(-1, joints.shape[1], values.shape[-1])

        self.rot, self.pos, self.grot, self.gpos = cut(clip.rot), cut(clip.pos), cut(clip.grot), cut(clip.gpos)
        self.rot[:, 0], self.pos[:, 0] = self.grot[:, 0], self.gpos[:, 0]

    def _legs_rows(self, values):
        """(N * G, ...) rows of this group's legs from per-frame, per-leg values (N, L, ...)."""
        return values[:, self.group.legs].reshape(-1, *values.shape[2:])

    def _frames_rows(self, values):
        """(N * G, ...) rows from per-frame values (N, ...), the same for every leg."""
        return np.repeat(values, len(self.group.legs), axis=0)

    def _limits_rows(self, values):
        """(N * G,) rows of a per-leg, per-clip-frame limit (G, F)."""
        return values[:, self.frames].T.reshape(-1)

    def turn_feet(self, turns, turned):
        """Turn each foot (the ankle and all below it) by a world rotation (N, L, 4) about
        the ankle, on the frames ``turned`` (N,)."""
        a = self.group.leg.ankle
        rows = self._frames_rows(turned)
        turns = self._legs_rows(turns)[rows, None]
        grot, gpos = self.grot[rows], self.gpos[rows]
        pivot = gpos[:, a : a + 1]
        grot[:, a:] = quat.multiply(turns, grot[:, a:])
        gpos[:, a:] = pivot + quat.rotate(turns, gpos[:, a:] - pivot)
        self.grot[rows], self.gpos[rows] = grot, gpos
        self.rot[rows, a] = quat.multiply(quat.conjugate(grot[:, a - 1]), grot[:, a])

    def translate(self, offsets):
        """Move every joint of each frame by its offset (N, 3): the pelvis above them moved."""
        offsets = self._frames_rows(offsets)
        self.gpos += offsets[:, None]
        self.pos[:, 0] += offsets

    def solve(self, targets, toe_shift, heel_shift, up, options):
        """The legs to their toe targets (N, L, 3), the ground clamps raised by the ground
        under each toe and heel (N, L) above the clip's floor."""
        g, lim, count = self.group, self.group.limits, len(self.frames)
        # The core's ground clamps hold for the clip's floor: they move with the terrain.
        here = LegLimits(
            max_extension=self._limits_rows(lim.max_extension),
            softening=self._limits_rows(lim.softening),
            knee_forward_local=np.tile(lim.knee_forward_local, (count, 1)),
            toe_min_height=np.tile(lim.toe_min_height, count) + self._legs_rows(toe_shift),
            heel_min_height=np.tile(lim.heel_min_height, count) + self._legs_rows(heel_shift),
            toe_end_min_height=np.tile(lim.toe_end_min_height, count) + self._legs_rows(toe_shift),
        )
        solve_leg(Pose(g.skeleton, self.rot, self.pos, self.grot, self.gpos), g.leg, here, self._legs_rows(targets),
                  up, options.leg_options)

    def rows(self):
        """The (solved) pose as (N, G, m, ...) arrays."""
        def split(values):
            return values.reshape(len(self.frames), len(self.group.legs), *values.shape[1:])

        return Pose(self.group.skeleton, split(self.rot), split(self.pos), split(self.grot), split(self.gpos))


def _ease(previous, target, dt):
    """Per-foot exponential smoothing; unknown (NaN) values snap to the new one."""
    if previous is None:
        return target
    eased = target + (previous - target) * math.exp(-dt / NORMAL_SMOOTHING)
    return np.where(np.isfinite(previous) & np.isfinite(target), eased, target)


def _foot_normals(normals, hit, up):
    """(L, 3) mean ground normal under each foot's toe and heel rays (2L, ...); NaN where
    neither hit. A face hit from behind describes the same ground: its normal is flipped up."""
    normals = np.where((normals @ up)[:, None] < 0.0, -normals, normals)
    toes, heels = np.where(hit[:, None], normals, 0.0).reshape(2, -1, 3)
    total = toes + heels
    mean = total / np.maximum(np.linalg.norm(total, axis=-1, keepdims=True), 1e-12)
    return np.where(hit.reshape(2, -1).any(axis=0)[:, None], mean, np.nan)


@dataclass
class PlayedClip:
    """Every frame of a clip as the runtime lock shows it, played from the start."""

    rot: np.ndarray  # (F, n, 4) local rotations
    pos: np.ndarray  # (F, n, 3) local translations
    toe_inputs: np.ndarray  # (F, L, 3) toes on the terrain, before locking
    toes: np.ndarray  # (F, L, 3) displayed toes
    contacts: list  # per frame, (K, 3) points the locked toes are pinned to


def play_clip(lock, ground):
    """Play ``lock`` over its whole clip from the first frame: steps 1-5 one frame step at
    a time, then the legs of every frame solved at once, each on ``ground.at(frame)``."""
    lock.reset()
    step = 1.0 / lock.clip.fps
    plans = [lock.plan(frame, step, ground.at(frame)) for frame in range(lock.clip.frames)]
    rot, pos, toes = lock.solve(plans)
    return PlayedClip(rot, pos, np.stack([plan.toe_inputs for plan in plans]), toes, [plan.contacts for plan in plans])
