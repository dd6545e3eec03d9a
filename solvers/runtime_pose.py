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
   pinned on the ground where they were set down; each toe keeps its authored clearance
   above its footprint, so a locked foot still rolls and lifts as authored;
4. each foot turned toward the ground normal under its toe and heel, tilt limited;
5. the pelvis lowered just enough for every foot to reach its target, eased, and where
   even that is not enough (a clip whose root runs ahead of its feet), moved across
   toward the foot a little;
6. the legs solved by the core's leg solver (:func:`~.leg_ik.solve_leg`).

Arrays keep the core's leading frame axis with a single frame, so the batched solvers run
unchanged. Where no ray hits (no ground mesh at all, or a foot off its edge), the clip's own
floor is the ground: the feet still lock, terrain only moves where they plant.
:func:`play_clip` runs the lock over the whole clip, as the add-on's Preview caches it.
"""

import math
from dataclasses import dataclass

import numpy as np

from . import quaternion as quat
from .foot_lock import FootLockSettings, leg_length
from .kinematics import Skeleton, check_motion, forward_kinematics
from .leg_ik import LegLimits, leg_chain, measure_leg, solve_leg
from .rig import Leg
from .runtime_lock import (
    FootLocker,
    PelvisDrop,
    PelvisPull,
    RuntimeSettings,
    align_to_normal,
    eased_ground,
    length_scale,
    path_window,
    root_follow,
)

# Time constant (seconds) of the ground normal under each foot.
NORMAL_SMOOTHING = 0.03
# Time constant (seconds) of the pelvis drop on terrain, much shorter than the root's: on
# stairs the body climbs while the back foot is still planted a step below, and a pelvis
# lagging behind would drag that foot.
PELVIS_SMOOTHING = 0.03


@dataclass
class RuntimeClip:
    """A clip as the runtime lock reads it: every frame's local and global pose, the legs."""

    skeleton: object
    rot: np.ndarray  # (F, n, 4) local rotations
    pos: np.ndarray  # (F, n, 3) local translations
    grot: np.ndarray  # (F, n, 4) global rotations
    gpos: np.ndarray  # (F, n, 3) global positions
    rig: object
    limits: list  # LegLimits per leg
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
    limits = [measure_leg(grot, gpos, leg, up, softening_ratio) for leg in rig.legs]
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
    ground_under: np.ndarray  # (L,) ground right under each toe, NaN where none
    toe_shift: np.ndarray  # (L,) how far the ground under each toe is from the floor (the lift where none)
    heel_shift: np.ndarray  # (L,) how far the ground under each heel is from the floor
    normals: np.ndarray  # (L, 3) eased ground normal under each foot, NaN where none


class TerrainFootLock:
    """Streaming foot lock of one character on terrain: call :meth:`step` once per frame.

    ``ground(origins, distance)`` casts a ray from each origin (k, 3) against ``up`` for at
    most ``distance`` and returns hit heights along ``up`` (k,), normals (k, 3) and hits
    (k,) bool. ``solver`` supplies the leg solver's options (:class:`FootLockSettings`).
    """

    def __init__(self, clip, settings=None, solver=None, root_follow=True, up=(0.0, 0.0, 1.0)):
        self.clip = clip
        self.settings = settings or RuntimeSettings(pelvis_drop_smoothing=PELVIS_SMOOTHING)
        self.solver = solver or FootLockSettings()
        self.root_follow = root_follow
        self.up = np.asarray(up, dtype=float) / np.linalg.norm(up)
        self.groups = _leg_groups(clip)
        self.toe_joints = [leg.toe for leg in clip.rig.legs]
        self.ankle_joints = [leg.ankle for leg in clip.rig.legs]
        self.reach = np.stack([lim.max_extension - lim.softening for lim in clip.limits])  # (L, F)
        # Like every threshold, the ledge limit is for an adult: scaled to this character.
        self.max_correction = self.settings.max_correction * length_scale(clip.leg_length)
        self.window, self.window_weights = path_window(clip.fps)
        self.locker = FootLocker(clip.leg_length, self.settings, self.up)
        self.pelvis = PelvisDrop(self.settings.pelvis_drop_smoothing,
                                 self.settings.max_pelvis_drop * clip.leg_length, self.up)
        self.pull = PelvisPull(self.settings.pelvis_drop_smoothing,
                               self.settings.max_pelvis_pull * clip.leg_length, self.up)
        self.reset()

    def reset(self):
        """Forget all history: the next step starts from the clip as it is."""
        self.locker.reset()
        self.pelvis.reset()
        self.pull.reset()
        self.lift = None  # root offset along up
        self.lift_target = 0.0
        self.normals = None

    def step(self, frame, dt, ground):
        """The displayed pose at clip frame index ``frame``, ``dt`` seconds after the last one.

        A ``dt`` that is not a small positive step (a jump, scrubbing backward) restarts.
        """
        if not (np.isfinite(dt) and 0.0 < dt <= self.settings.max_step):
            self.reset()
            dt = 0.0  # every smoother snaps, the locker restarts from its input
        c = self.clip
        rays = self._cast(frame, ground)
        lift = self._follow_root(rays, dt)
        feet = self._sample_feet(frame, rays, lift, dt)
        legs = [_GroupPose(group, c, frame) for group in self.groups]
        targets = self._lock(feet, frame, dt)
        self._align_feet(legs, feet.normals)
        shift = (lift - self._pelvis_drop(legs, frame, lift, targets, dt)) * self.up
        shift = shift + self._pelvis_pull(legs, frame, shift, targets, dt)
        for pose in legs:
            pose.translate(shift)
            pose.solve(targets, feet, frame, self.up, self.solver)
        return FrameResult(*self._locals(legs, frame, shift), feet.toe_inputs, self._gather(legs, "toe"),
                           self.locker.contact[self.locker.locked].copy())

    def _lock(self, feet, frame, dt):
        """Toe targets (L, 3): the footprints under the toes locked, each toe at its
        authored clearance above its footprint."""
        contacts = None if self.clip.contacts is None else self.clip.contacts[:, frame]
        clearance = feet.clearance[:, None] * self.up
        return self.locker.update(feet.toe_inputs - clearance, dt, contacts, feet.ground_under) + clearance

    def _cast(self, frame, ground):
        """One batch of rays for this frame: along the clip's paths of the pelvis and of
        every toe over the window around ``frame``, then under every heel. Each ray starts
        ``max_correction`` above the character's current ground and is twice that long: only
        corrections up to ``max_correction`` can hit."""
        c, up = self.clip, self.up
        path = np.clip(frame + self.window, 0, c.frames - 1)
        walkers = [c.rig.pelvis, *self.toe_joints]
        points = np.concatenate((c.gpos[path][:, walkers].transpose(1, 0, 2).reshape(-1, 3),
                                 c.gpos[frame, self.ankle_joints]))
        base = c.floor + (0.0 if self.lift is None else self.lift)
        origins = points + (base + self.max_correction - points @ up)[:, None] * up
        heights, normals, hit = ground(origins, 2.0 * self.max_correction)
        return _Rays(heights, normals, hit, len(walkers), len(self.window))

    def _follow_root(self, rays, dt):
        """The root's offset along up, eased toward the ground along the pelvis' path."""
        if not self.root_follow:
            return 0.0
        s, floor = self.settings, self.clip.floor
        lift = 0.0 if self.lift is None else self.lift
        heights, valid = rays.paths()
        # Ground beyond max_correction from the current one is a ledge or a hole, and no
        # ground is none: the body keeps going toward the last ground it had.
        valid = valid[:1] & (np.abs(heights[:1] - floor - lift) <= self.max_correction)
        # The tent-weighted mean ground along the path: the body starts to climb (or go
        # down) before the step and ends after it, as symmetric as the step is.
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

    def _sample_feet(self, frame, rays, lift, dt):
        """Each toe on the ground along its path, kept at its authored clearance."""
        c, up = self.clip, self.up
        heights, valid = rays.paths()
        heights, valid = heights[1:], valid[1:]
        base = c.floor + lift
        # A ledge or a bad hit, like no ground at all, leaves the toe on the clip's floor.
        valid &= np.abs(heights - base) <= self.max_correction
        fallback = np.full(len(heights), base)
        eased = eased_ground(heights, valid, fallback, self.window_weights)
        centre = int(np.argmax(self.window_weights))
        under = np.where(valid[:, centre], heights[:, centre], np.nan)
        heel = rays.heels()
        self.normals = _ease(self.normals, _foot_normals(rays, centre, up), dt)
        authored = c.gpos[frame, self.toe_joints]
        toe_inputs = authored + (lift + eased - base)[:, None] * up
        # The leg solver's ground clamps hold for the ground right under each toe (the
        # eased ground is a target, and would hold a foot locked below a step up).
        toe_shift = np.where(np.isfinite(under), under - c.floor, lift)
        return _FeetSample(
            toe_inputs=toe_inputs,
            clearance=authored @ up - c.floor,
            ground_under=under,
            toe_shift=toe_shift,
            heel_shift=np.where(np.isfinite(heel), heel - c.floor, toe_shift),
            normals=self.normals,
        )

    def _align_feet(self, legs, normals):
        """Turn each foot toward the ground normal under it (none where there is no ground)."""
        tilted = np.isfinite(normals).all(axis=1) & (normals @ self.up < 1.0 - 1e-12)
        if not tilted.any():
            return  # flat ground (or stairs): the feet stay as authored
        normals = np.where(tilted[:, None], normals, self.up)
        turns = align_to_normal(normals, self.settings.max_tilt, self.up)
        for pose in legs:
            pose.turn_feet(turns[pose.group.legs])

    def _pelvis_drop(self, legs, frame, lift, targets, dt):
        """How far the pelvis goes down for every (turned) foot to reach its target."""
        hips = self._gather(legs, "hip") + lift * self.up
        ankles = targets + self._gather(legs, "ankle") - self._gather(legs, "toe")
        return self.pelvis.update(hips, ankles, self.reach[:, frame], dt)

    def _pelvis_pull(self, legs, frame, shift, targets, dt):
        """How far the (lowered) pelvis moves across for every foot to reach its target."""
        hips = self._gather(legs, "hip") + shift
        ankles = targets + self._gather(legs, "ankle") - self._gather(legs, "toe")
        return self.pull.update(hips, ankles, self.reach[:, frame], dt)

    def _gather(self, legs, role):
        """(L, 3) world position of one role (``"hip"``, ``"toe"``, ...) of every leg."""
        out = np.empty((len(self.clip.rig.legs), 3))
        for pose in legs:
            out[pose.group.legs] = pose.gpos[:, getattr(pose.group.leg, role)]
        return out

    def _locals(self, legs, frame, shift):
        """The clip's local pose at ``frame`` with the solved legs and the moved pelvis."""
        c = self.clip
        rot, pos = c.rot[frame].copy(), c.pos[frame].copy()
        for pose in legs:
            rot[pose.group.joints[:, 1:]] = pose.rot[:, 1:]
        parent = c.skeleton.parents[c.rig.pelvis]
        pos[c.rig.pelvis] += shift if parent < 0 else quat.rotate(quat.conjugate(c.grot[frame, parent]), shift)
        return rot, pos


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
    """One frame of a leg group: its joints' rows (G, m) cut from the clip's pose. The
    small skeleton's root (the hip's parent) takes its global transform as its local one."""

    def __init__(self, group, clip, frame):
        self.group = group
        joints = group.joints
        self.rot, self.pos = clip.rot[frame][joints], clip.pos[frame][joints]
        self.grot, self.gpos = clip.grot[frame][joints], clip.gpos[frame][joints]
        self.rot[:, 0], self.pos[:, 0] = self.grot[:, 0], self.gpos[:, 0]

    def turn_feet(self, turns):
        """Turn each foot (the ankle and all below it) by a world rotation (G, 4) about the ankle."""
        a = self.group.leg.ankle
        pivot = self.gpos[:, a : a + 1]
        self.grot[:, a:] = quat.multiply(turns[:, None], self.grot[:, a:])
        self.gpos[:, a:] = pivot + quat.rotate(turns[:, None], self.gpos[:, a:] - pivot)
        self.rot[:, a] = quat.multiply(quat.conjugate(self.grot[:, a - 1]), self.grot[:, a])

    def translate(self, offset):
        """Move every joint by ``offset`` (3,): the pelvis above them moved."""
        self.gpos += offset
        self.pos[:, 0] += offset

    def solve(self, targets, feet, frame, up, options):
        g, lim, legs = self.group, self.group.limits, self.group.legs
        # The core's ground clamps hold for the clip's floor: they move with the terrain.
        here = LegLimits(
            max_extension=lim.max_extension[:, frame],
            softening=lim.softening[:, frame],
            knee_forward_local=lim.knee_forward_local,
            toe_min_height=lim.toe_min_height + feet.toe_shift[legs],
            heel_min_height=lim.heel_min_height + feet.heel_shift[legs],
            toe_end_min_height=lim.toe_end_min_height + feet.toe_shift[legs],
        )
        solve_leg(g.skeleton, self.rot, self.pos, self.grot, self.gpos, g.leg, here, targets[legs], up,
                  options.height_clamp, options.heel_look_at, options.toe_look_at)


@dataclass
class _Rays:
    """One frame's ray hits: ``walkers`` paths (the pelvis', then each toe's) of ``samples``
    points each, then one ray under each heel."""

    heights: np.ndarray
    normals: np.ndarray
    hit: np.ndarray
    walkers: int
    samples: int

    def paths(self):
        """Hit heights and hits (walkers, samples)."""
        cut = self.walkers * self.samples
        shape = (self.walkers, self.samples)
        return self.heights[:cut].reshape(shape), self.hit[:cut].reshape(shape)

    def heels(self):
        """(L,) ground height under each heel, NaN where none."""
        cut = self.walkers * self.samples
        return np.where(self.hit[cut:], self.heights[cut:], np.nan)

    def foot_normals(self, centre):
        """(L, 3) normals (flipped up) and hits (L,) under each toe and under each heel."""
        normals = self.normals.reshape(-1, 3)
        cut = self.walkers * self.samples
        toes = normals[: cut].reshape(self.walkers, self.samples, 3)[1:, centre]
        hit_toes = self.hit[: cut].reshape(self.walkers, self.samples)[1:, centre]
        return toes, hit_toes, normals[cut:], self.hit[cut:]


def _ease(previous, target, dt):
    """Per-foot exponential smoothing; unknown (NaN) values snap to the new one."""
    if previous is None:
        return target
    eased = target + (previous - target) * math.exp(-dt / NORMAL_SMOOTHING)
    return np.where(np.isfinite(previous) & np.isfinite(target), eased, target)


def _foot_normals(rays, centre, up):
    """(L, 3) mean ground normal under each foot's toe and heel (the path's other samples
    are for height only); NaN where neither hit. A face hit from behind describes the
    same ground: its normal is flipped up."""
    toes, hit_toes, heels, hit_heels = rays.foot_normals(centre)
    total = np.zeros_like(heels)
    for normals, hit in ((toes, hit_toes), (heels, hit_heels)):
        facing = np.where((normals @ up)[:, None] < 0.0, -normals, normals)
        total += np.where(hit[:, None], facing, 0.0)
    mean = total / np.maximum(np.linalg.norm(total, axis=-1, keepdims=True), 1e-12)
    return np.where((hit_toes | hit_heels)[:, None], mean, np.nan)


@dataclass
class PlayedClip:
    """Every frame of a clip as the runtime lock shows it, played from the start."""

    rot: np.ndarray  # (F, n, 4) local rotations
    pos: np.ndarray  # (F, n, 3) local translations
    toe_inputs: np.ndarray  # (F, L, 3) toes on the terrain, before locking
    toes: np.ndarray  # (F, L, 3) displayed toes
    contacts: list  # per frame, (K, 3) points the locked toes are pinned to


def play_clip(lock, ground):
    """Play ``lock`` over its whole clip from the first frame, one frame step at a time."""
    lock.reset()
    step = 1.0 / lock.clip.fps
    results = [lock.step(frame, step, ground) for frame in range(lock.clip.frames)]
    return PlayedClip(*(np.stack([getattr(r, name) for r in results]) for name in ("rot", "pos", "toe_inputs", "toes")),
                      [r.contacts for r in results])
