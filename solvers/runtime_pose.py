"""One frame of the runtime foot lock on terrain, as a game engine runs it (numpy only).

:class:`TerrainFootLock` turns the clip's pose at one frame into the displayed pose,
given the time since the previous call and the ground (the add-on raycasts the scene;
tests can pass any function). Per frame:

1. root follow: the character rises and falls with the ground under its pelvis, eased
   (a staircase becomes a climb, not a jolt), on top of the clip's own root motion;
2. terrain: each toe moves with the ground under it and keeps its authored height above
   the clip's floor, so a foot lifted mid-stride stays lifted; a swinging toe also looks
   a little ahead along its motion, so it rises before a step instead of clipping it;
3. foot lock (:class:`~.runtime_lock.FootLocker`) of the footprints under those toes,
   pinned on the ground where they were set down; each toe keeps its authored clearance
   above its footprint, so a locked foot still rolls and lifts as authored;
4. each foot turned toward the ground normal under its toe and heel, tilt limited;
5. the pelvis lowered just enough for every foot to reach its target, eased;
6. the legs solved by the core's leg solver (:func:`~.leg_ik.solve_leg`).

Arrays keep the core's leading frame axis with a single frame, so the batched solvers run
unchanged. Where there is no ground under the character at all, the frame is given back
as authored and the history is dropped, as a game leaves an airborne character alone.
"""

import math
from dataclasses import dataclass

import numpy as np

from . import quaternion as quat
from .foot_lock import FootLockSettings, leg_length
from .kinematics import Pose, Skeleton, check_motion, forward_kinematics
from .leg_ik import LegLimits, leg_chain, measure_leg, solve_leg
from .rig import Leg, Rig
from .runtime_lock import (
    FootLocker,
    PelvisDrop,
    RuntimeSettings,
    align_to_normal,
    length_scale,
    root_follow,
    terrain_targets,
)

# A toe also samples the ground where the clip moves it this much later (seconds): it
# starts to rise before a step, not when it is already inside it.
LOOKAHEAD = 0.1
# Time constant (seconds) of the ground and normal under each foot: a step edge passing
# under a swinging foot is eased over a few frames instead of popping it up.
GROUND_SMOOTHING = 0.03
# Time constant (seconds) of the pelvis drop on terrain, much shorter than the root's: on
# stairs the body climbs while the back foot is still planted a step below, and a pelvis
# lagging behind would drag that foot.
PELVIS_SMOOTHING = 0.03


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
    toe_shift: np.ndarray  # (L,) how far root and terrain moved each toe along up
    heel_shift: np.ndarray  # (L,) how far the ground under each heel is from the floor
    normals: np.ndarray  # (L, 3) eased ground normal under each foot, NaN where none
    found: bool  # whether any ray hit


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
        self.locker = FootLocker(clip.leg_length, self.settings, self.up)
        self.pelvis = PelvisDrop(self.settings.pelvis_drop_smoothing,
                                 self.settings.max_pelvis_drop * clip.leg_length, self.up)
        self.reset()

    def reset(self):
        """Forget all history: the next step starts from the clip as it is."""
        self.locker.reset()
        self.pelvis.reset()
        self.lift = None  # root offset along up
        self.lift_target = 0.0
        self.ground = None  # (L,) eased ground height under each toe, NaN where none
        self.normals = None

    def step(self, frame, dt, ground):
        """The displayed pose at clip frame index ``frame``, ``dt`` seconds after the last one.

        A ``dt`` that is not a small positive step (a jump, scrubbing backward) restarts.
        """
        if not (np.isfinite(dt) and 0.0 < dt <= self.settings.max_step):
            self.reset()
            dt = 0.0  # every smoother snaps, the locker restarts from its input
        c = self.clip
        root_found, lift = self._follow_root(c.gpos[frame, c.rig.pelvis], dt, ground)
        feet = self._sample_feet(frame, lift, dt, ground)
        legs = [_GroupPose(group, c, frame) for group in self.groups]
        if not (root_found or feet.found):
            self.reset()
            toes = self._gather(legs, "toe")
            return FrameResult(c.rot[frame].copy(), c.pos[frame].copy(), toes, toes, np.empty((0, 3)))
        targets = self._lock(feet, frame, dt)
        self._align_feet(legs, feet.normals)
        shift = (lift - self._pelvis_drop(legs, frame, lift, targets, dt)) * self.up
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

    def _follow_root(self, pelvis, dt, ground):
        """(whether there is ground under the pelvis, the root's offset along up)."""
        if not self.root_follow:
            return False, 0.0
        s, floor = self.settings, self.clip.floor
        lift = 0.0 if self.lift is None else self.lift
        origin = pelvis + lift * self.up
        depth = origin @ self.up - (floor + lift) + self.max_correction
        height, _, hit = ground(origin[None], depth)
        if hit[0] and (self.lift is None or abs(height[0] - floor - lift) <= self.max_correction):
            self.lift_target = float(height[0] - floor)
        # else: a ledge or a hole under the pelvis; keep going toward the last ground.
        self.lift = float(root_follow(lift, self.lift_target, dt, s.root_follow_smoothing))
        return bool(hit[0]), self.lift

    def _sample_feet(self, frame, lift, dt, ground):
        """Rays under each toe, a little ahead of it, and under its heel, from above the
        character's current ground: only corrections up to ``max_correction`` can hit."""
        c, up = self.clip, self.up
        authored = c.gpos[frame, self.toe_joints]
        later = authored + (authored - c.gpos[max(frame - 1, 0), self.toe_joints]) * (c.fps * LOOKAHEAD)
        points = np.concatenate((authored, later, c.gpos[frame, self.ankle_joints]))
        base = c.floor + lift
        origins = points + (base + self.max_correction - points @ up)[:, None] * up
        heights, normals, hit = ground(origins, 2.0 * self.max_correction)
        under, ahead, heel = np.where(hit, heights, np.nan).reshape(3, -1)
        self.ground = _ease(self.ground, np.fmax(under, ahead), dt)
        self.normals = _ease(self.normals, _foot_normals(normals, hit, up), dt)
        toes = authored + lift * up
        toe_inputs = terrain_targets(toes, base, self.ground, np.isfinite(self.ground), self.max_correction, up)
        toe_shift = (toe_inputs - authored) @ up
        return _FeetSample(
            toe_inputs=toe_inputs,
            clearance=authored @ up - c.floor,
            ground_under=under,
            toe_shift=toe_shift,
            heel_shift=np.where(np.isfinite(heel), heel - c.floor, toe_shift),
            normals=self.normals,
            found=bool(hit.any()),
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
        solve_leg(Pose(g.skeleton, self.rot, self.pos, self.grot, self.gpos), g.leg, here, targets[legs], up,
                  options.leg_options)


def _ease(previous, target, dt):
    """Per-foot exponential smoothing; unknown (NaN) values snap to the new one."""
    if previous is None:
        return target
    eased = target + (previous - target) * math.exp(-dt / GROUND_SMOOTHING)
    return np.where(np.isfinite(previous) & np.isfinite(target), eased, target)


def _foot_normals(normals, hit, up):
    """(L, 3) mean ground normal under each foot's toe and heel rays (the rays ahead are
    for height only); NaN where neither hit."""
    normals = np.where((normals @ up)[:, None] < 0.0, -normals, normals)  # a face hit from behind
    under, _, heel = np.where(hit[:, None], normals, 0.0).reshape(3, -1, 3)
    hit_under, _, hit_heel = hit.reshape(3, -1)
    total = under + heel
    mean = total / np.maximum(np.linalg.norm(total, axis=-1, keepdims=True), 1e-12)
    return np.where((hit_under | hit_heel)[:, None], mean, np.nan)


def play_clip(lock, ground):
    """Every frame of the clip played from the start: local rotations and translations (F, n, ...)."""
    lock.reset()
    step = 1.0 / lock.clip.fps
    results = [lock.step(frame, step, ground) for frame in range(lock.clip.frames)]
    return np.stack([r.rot for r in results]), np.stack([r.pos for r in results])
