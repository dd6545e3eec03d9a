"""Contact timing against force-plate truth (gait-lab trials, markers only).

    python benchmarks/forceplate.py [DIR]   (default: the trials bundled in tests/data/forceplate)

A trial is ``<name>.c3d`` (read with the pure-Python ``c3d`` package from PyPI) beside
``<name>.contacts.json``: per plate, the foot on it and its contact frames measured by the
plate (vertical force above 20 N). Markers stand in for joints: heel = the heel marker,
toe = a metatarsal-head marker (where the marker sets place their toe marker), toe tip = the
front of the foot estimated beyond it (:func:`foot_tips`), root = the mean of the pelvis
markers. The foot's contact is heel OR toe (heel strike to toe-off). Only the frames around
each plate stance are scored (outside a plate, 0 means "not measured", not "in the air").

A plate measures the sum of what stands on it. Where the other foot lands on a plate the
stance foot still stands on (a long plate, a short step: walk.c3d's last plate), the plate
cannot tell when the first foot leaves: from the other foot's arrival on, the stance foot's
truth is unknown, and those frames are not scored (:func:`shared_plate_frames`).
"""

import json
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Marker names as the common marker sets write them, a side's letter or word before or
# after (Plug-in Gait LHEE / LTOE / LASI, CAST L_FCC / L_FM1 / L_IAS, BTS "l heel" / "l met",
# "L.Heel.Bottom" / "L.MT1" / "L.ASIS", a Vicon subject's "Bob:LHEE"), compared without case,
# separators or subject: per foot the first name of each list found wins, pelvis markers are
# averaged. The toe is a metatarsal head: where the sets place their toe marker.
HEEL_NAMES = ("hee", "heel", "fcc", "cal", "calc", "heelbottom", "heelback", "heeltop")
TOE_NAMES = ("toe", "met", "fm1", "mt1", "mh1", "fm2", "mt2", "mh2", "p1m", "d1m", "fm5", "mt5", "mh5")
PELVIS_NAMES = ("asi", "asis", "ias", "psi", "psis", "ips")  # one per side
SACRUM_NAMES = ("sacr", "sacrum", "sacral", "sac")  # or one in the middle
FEET = ("L", "R")
SIDES = {"L": ("l", "left"), "R": ("r", "right")}
SCORE_MARGIN = 0.3  # s scored before and after each plate stance (the foot is in swing there)
MM = 0.001  # the unit of a C3D file's points unless its POINT:UNITS says another
METRES_PER_UNIT = {"mm": MM, "cm": 0.01, "m": 1.0}
# A reference adult's pelvis markers stand about 0.95 m above the heel markers, its leg
# (hip to ankle) is 0.85 m long: the ratio turns a trial's marker heights into a leg length.
LEG_PER_PELVIS_HEIGHT = 0.85 / 0.95
TARGET_F1, TARGET_ERROR_MS = 0.95, 30.0
BUNDLED_TRIALS = Path(__file__).resolve().parents[1] / "tests" / "data" / "forceplate"  # the shared trials' copies
# The other foot stands on a plate when its sole is over the plate, a marker within this of
# the lowest that marker goes in the trial, and slower than a swing (truth is read from the
# recorded trial only, never from the labeller).
ON_PLATE_HEIGHT, ON_PLATE_SPEED, PLATE_INSET = 0.03, 1.0, 0.01  # m, m/s, m
# The ball of the foot lies at about 73% of the foot's length from the heel (as shoe fitting
# measures it): the front of the foot reaches this share of the heel-to-ball length beyond it.
TIP_BEYOND_BALL = 0.27 / 0.73


@dataclass
class Trial:
    name: str
    heels: np.ndarray  # (2, F, 3) metres, feet in FEET order
    toes: np.ndarray  # (2, F, 3)
    root: np.ndarray  # (F, 3)
    up: np.ndarray  # (3,)
    fps: float
    stances: list  # (foot index, start, end) frames, end exclusive, within the trial's frames
    leg_length: float
    known: np.ndarray  # (2, F) frames where the plates tell whether the foot stands (see module doc)
    pace: float = 1.0  # how many times faster than recorded the trial plays (see :func:`quickened`)

    def copy(self, heels=None, toes=None, root=None):
        return Trial(self.name, self.heels if heels is None else heels, self.toes if toes is None else toes,
                     self.root if root is None else root, self.up, self.fps, self.stances, self.leg_length,
                     self.known, self.pace)


def read_markers(path):
    """Marker labels, the point rate, positions (F, markers, 3) in metres, NaN where invalid,
    and the force plates' corners (plates, 4, 3) in metres (lab axes, as the markers), None
    where the file does not give them."""
    import c3d

    with open(path, "rb") as handle, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "No analog data found")  # markers alone: no analog data is read here
        reader = c3d.Reader(handle)
        labels = [label.strip() for label in reader.point_labels]
        points = np.array([frame for _, frame, _ in reader.read_frames()], dtype=float)
        rate = float(reader.point_rate)
        units = reader.get("POINT:UNITS")
        metres = METRES_PER_UNIT.get(units.string_value.strip().lower(), MM) if units is not None else MM
        plates = reader.get("FORCE_PLATFORM")
        corners = None if plates is None else plates.get("CORNERS")
        if corners is not None:
            corners = np.asarray(corners.float_array, dtype=float).reshape(-1, 4, 3) * metres
    positions = points[..., :3] * metres
    positions[points[..., 3] < 0] = np.nan  # a negative residual marks a marker not seen
    return labels, rate, positions, corners


def marker_key(label):
    """A label as :data:`HEEL_NAMES` and the others compare it: lower case, without its
    subject (``"Bob:"``) or separators (``"L.Heel.Bottom"`` -> ``"lheelbottom"``)."""
    return re.sub(r"[^a-z0-9]", "", label.rsplit(":", 1)[-1].lower())


def sided_markers(labels, names, foot):
    """Indices of the ``labels`` that are one of ``names`` on ``foot``'s side, in the order
    of ``names`` (a side's letter or word before the name or after it)."""
    keys = [marker_key(label) for label in labels]
    return [keys.index(key) for name in names for side in SIDES[foot] for key in (side + name, name + side)
            if key in keys]


def pick(labels, positions, names, foot):
    found = sided_markers(labels, names, foot)
    if not found:
        raise KeyError(f"no {foot} marker named as any of {names} in the trial (labels: {labels})")
    return positions[:, found[0]]


def pelvis_markers(labels):
    """Indices of the pelvis markers among ``labels``: both sides' ASIS and PSIS, and a sacrum."""
    keys = [marker_key(label) for label in labels]
    sided = {index for foot in FEET for index in sided_markers(labels, PELVIS_NAMES, foot)}
    found = sorted(sided | {keys.index(name) for name in SACRUM_NAMES if name in keys})
    if not found:
        raise KeyError(f"no pelvis marker (ASIS, PSIS or sacrum) in the trial (labels: {labels})")
    return found


def mean_of_seen(tracks):
    """Mean (F, 3) of the tracks seen at each frame; NaN where none is."""
    seen = np.isfinite(tracks)
    with np.errstate(invalid="ignore"):
        return np.where(seen, tracks, 0.0).sum(axis=0) / seen.sum(axis=0)


def load_trial(c3d_path):
    """The trial cut to the frames where every marker used is seen at both ends, the gaps
    between bridged as the labeller bridges them."""
    from foot_lock.solvers.contacts import gaps_bridged

    c3d_path = Path(c3d_path)
    labels, rate, positions, corners = read_markers(c3d_path)
    heels = [pick(labels, positions, HEEL_NAMES, foot) for foot in FEET]
    toes = [pick(labels, positions, TOE_NAMES, foot) for foot in FEET]
    root = mean_of_seen(positions[:, pelvis_markers(labels)].swapaxes(0, 1))
    tracks = np.stack([*heels, *toes, root])
    seen = np.flatnonzero(np.isfinite(tracks).all(axis=(0, 2)))
    first, last = seen[0], seen[-1] + 1
    tracks = gaps_bridged(tracks[:, first:last], "markers")
    heels, toes, root = tracks[:2], tracks[2:4], tracks[4]
    up = vertical_axis(root, heels)
    truth = json.loads(c3d_path.with_suffix("").with_suffix(".contacts.json").read_text())
    plate_stances = [
        (FEET.index(plate["foot"]), plate["plate"] - 1, max(start - first, 0), min(end - first, last - first))
        for plate in truth["plates"] if plate["foot"] in FEET
        for start, end in plate["contact_frames_0based"] if end > first and start < last
    ]
    known = np.ones(heels.shape[:2], dtype=bool)
    # Without the plates' corners, no frame can be told shared: all are scored.
    for foot, plate, start, end in plate_stances if corners is not None else ():
        known[foot, start:end] &= ~shared_plate_frames(heels[1 - foot], toes[1 - foot], corners[plate], up, rate,
                                                       start, end)
    stances = [(foot, start, end) for foot, _, start, end in plate_stances]
    pelvis_height = np.median(root @ up) - np.percentile(heels @ up, 5)
    return Trial(c3d_path.stem, heels, toes, root, up, rate, stances, LEG_PER_PELVIS_HEIGHT * pelvis_height, known)


def shared_plate_frames(heel, toe, corners, up, fps, start, end):
    """Frames (end - start,) of a plate stance whose truth is unknown because the other foot
    (``heel``, ``toe``: its (F, 3) markers) stands on the plate too: from its arrival to the
    stance's end, or from the stance's start to its departure if it was there first."""
    on_plate = (foot_down(heel, up, fps) | foot_down(toe, up, fps)) & sole_over_plate(heel, toe, corners, up)
    on_plate = on_plate[start:end]
    shared = np.zeros_like(on_plate)
    if on_plate.any():
        arrived, left = np.flatnonzero(on_plate)[[0, -1]]
        if on_plate[0]:
            shared[: left + 1] = True
        else:
            shared[arrived:] = True
    return shared


def foot_down(marker, up, fps):
    """Frames (F,) where a marker (F, 3) is near the lowest it goes in the trial and slow."""
    heights = marker @ up
    speed = np.linalg.norm(np.gradient(marker, axis=0), axis=-1) * fps
    return (heights < heights.min() + ON_PLATE_HEIGHT) & (speed < ON_PLATE_SPEED)


def sole_over_plate(heel, toe, corners, up, samples=5):
    """Frames (F,) where part of the sole -- the heel-to-toe marker line (F, 3) -- lies over
    the plate's rectangle (its 4 corners) seen along ``up``, at least ``PLATE_INSET`` inside
    its edges (a marker on the edge of one plate is not on its neighbour)."""
    origin = corners[0]
    edges = horizontal(corners[[1, 3]] - origin, up)  # two sides from the first corner
    lengths = np.linalg.norm(edges, axis=1)
    inset = PLATE_INSET / lengths
    over = np.zeros(len(heel), dtype=bool)
    for share in np.linspace(0.0, 1.0, samples):
        along = horizontal(heel + share * (toe - heel) - origin, up) @ edges.T / lengths**2
        over |= np.all((along >= inset) & (along <= 1.0 - inset), axis=1)
    return over


def vertical_axis(root, heels):
    """The world axis along which the pelvis stands above the heels (labs use Y or Z up)."""
    offset = np.mean(root[None] - heels, axis=(0, 1))
    axis = np.zeros(3)
    axis[np.argmax(np.abs(offset))] = np.sign(offset[np.argmax(np.abs(offset))])
    return axis


def horizontal(vectors, up):
    return vectors - (vectors @ up)[..., None] * up


def scale_travel(trial, factor):
    """A root-speed mismatch: every marker moves with ``factor - 1`` times the root's horizontal
    travel (as the joints under a scaled root do), so a planted foot slides."""
    shift = (factor - 1.0) * horizontal(trial.root - trial.root[0], trial.up)
    return trial.copy(trial.heels + shift[None], trial.toes + shift[None], trial.root + shift)


def drift_stances(trial, speed):
    """The stance foot drifts ``speed`` m/s along the direction of travel during each plate
    stance (not proportional to the root: a foot that skates on its own)."""
    direction = horizontal(trial.root[-1] - trial.root[0], trial.up)
    direction /= np.linalg.norm(direction)
    frames = trial.root.shape[0]
    heels, toes = trial.heels.copy(), trial.toes.copy()
    for foot, start, end in trial.stances:
        elapsed = np.clip(np.arange(frames) - start, 0, end - start) / trial.fps
        offset = speed * elapsed[:, None] * direction
        heels[foot] += offset
        toes[foot] += offset
    return trial.copy(heels, toes)


MARKER_NOISE = 0.005  # m, std per marker, axis and frame: a noisy lab or a markerless capture


def with_marker_noise(trial, std, seed=0):
    """Every marker (and the pelvis centre) jittered independently each frame by ``std``."""
    rng = np.random.default_rng(seed)
    return trial.copy(*(points + rng.normal(0.0, std, points.shape) for points in (trial.heels, trial.toes, trial.root)))


def on_a_belt(trial, first=1.0, last=1.0):
    """The trial as on a treadmill: everything carried back at the walk's mean speed, so the
    pelvis sways about one place and every planted foot rides the belt backward; with
    ``first`` and ``last``, a belt whose speed ramps from ``first`` to ``last`` times that
    while the walker keeps the recorded pace (the pelvis drifting forward, then back: the
    planted feet's share of its motion changes over the trial)."""
    frames = len(trial.root)
    step = horizontal(trial.root[-1] - trial.root[0], trial.up) / max(frames - 1, 1)
    pace = np.linspace(first, last, frames)
    carried = np.concatenate([[0.0], np.cumsum(0.5 * (pace[1:] + pace[:-1]))])  # in mean steps
    shift = -carried[:, None] * step
    return trial.copy(trial.heels + shift[None], trial.toes + shift[None], trial.root + shift)


def quickened(trial, factor):
    """The trial played ``factor`` (an integer) times faster at its own frame rate: every
    ``factor``-th frame. Its stances last a ``factor`` shorter, its feet move ``factor`` times
    faster; its truth is the plates' at the same frames, scored as far around each stance
    as the recorded trial's margin, played as fast."""
    frames = slice(None, None, factor)
    return Trial(trial.name, trial.heels[:, frames], trial.toes[:, frames], trial.root[frames], trial.up, trial.fps,
                 [(foot, -(-start // factor), -(-end // factor)) for foot, start, end in trial.stances],
                 trial.leg_length, trial.known[:, frames], trial.pace * factor)


def slowed(trial, factor):
    """The trial played ``factor`` (below 1) times as fast at its own frame rate: its markers
    between the recorded frames, ``factor`` of a frame apart (a line between the two around
    each). Its stances last ``1 / factor`` longer, its feet move ``factor`` as fast; its truth
    is the plates' at the same moments (a contact from the first frame at or after the plate's
    start to the first at or after its end), scored as far around each stance as the recorded
    trial's margin, played as slowly."""
    frames = len(trial.root)
    at = np.arange(0.0, frames - 1 + 1e-9, factor)  # the recorded frame each frame plays
    before = np.minimum(at.astype(int), frames - 2)
    after = (at - before)[:, None]

    def played(points):
        return points[..., before, :] * (1.0 - after) + points[..., before + 1, :] * after

    def frame_of(recorded):
        return min(int(np.ceil(recorded / factor - 1e-9)), len(at))

    return Trial(trial.name, played(trial.heels), played(trial.toes), played(trial.root), trial.up, trial.fps,
                 [(foot, frame_of(start), frame_of(end)) for foot, start, end in trial.stances], trial.leg_length,
                 trial.known[:, np.round(at).astype(int)], trial.pace * factor)


def walked_backward(trial):
    """The trial played backward in time: a walk backward, landing on the toes and leaving
    from the heel, each plate stance the same frames counted from the other end."""
    frames = len(trial.root)
    return Trial(trial.name, trial.heels[:, ::-1].copy(), trial.toes[:, ::-1].copy(), trial.root[::-1].copy(),
                 trial.up, trial.fps, [(foot, frames - end, frames - start) for foot, start, end in trial.stances],
                 trial.leg_length, trial.known[:, ::-1].copy(), trial.pace)


def scenarios(trial):
    return {
        "as recorded": trial,
        "travel x0.75": scale_travel(trial, 0.75),
        "travel x1.25": scale_travel(trial, 1.25),
        "drift +0.25": drift_stances(trial, 0.25),
        "drift -0.25": drift_stances(trial, -0.25),
        "noise 5 mm": with_marker_noise(trial, MARKER_NOISE),
        "treadmill": on_a_belt(trial),
        "belt x0.5-1.5": on_a_belt(trial, 0.5, 1.5),
        "belt x1.5-0.5": on_a_belt(trial, 1.5, 0.5),
        "backward": walked_backward(trial),
        "backward x2": walked_backward(quickened(trial, 2)),
        # A treadmill at two and three times the pace: stances of 0.2-0.3 s (a run's), the
        # belt carrying the planted feet back at 1.8-4.4 m/s.
        "treadmill x2": on_a_belt(quickened(trial, 2)),
        "treadmill x3": on_a_belt(quickened(trial, 3)),
    }


def foot_tips(heels, toes):
    """The front of each foot (L, F, 3), on the heel-to-ball line ``TIP_BEYOND_BALL`` of its
    length beyond the metatarsal-head marker. At push-off the foot rolls about its toes: the
    met-head marker rises tens of milliseconds before the toes leave the plate."""
    return toes + TIP_BEYOND_BALL * (toes - heels)


def foot_labels(trial, settings=None):
    """Foot contact (heel or toe), boolean (2, F), from the labeller under test; the toe is
    planted while its marker or the front of the foot is (:func:`foot_tips`)."""
    from foot_lock.solvers.contacts import detect_foot_contacts

    heel, toe, _ = detect_foot_contacts(trial.heels, trial.toes, trial.root, trial.up, trial.fps,
                                     trial.leg_length, settings, toe_tips=foot_tips(trial.heels, trial.toes))
    return np.maximum(heel, toe) > 0.5


def score(labels, trial):
    """F1 over the scored frames, and the mean onset / offset errors (ms) per stance."""
    counts, onset, offset = stance_counts(labels, trial)
    f1 = 2.0 * counts[0] / max(counts[1] + counts[2], 1)
    return f1, float(np.mean(onset)) if onset else np.nan, float(np.mean(offset)) if offset else np.nan


def stance_counts(labels, trial):
    """(true positives, labelled, true) frames around the plate stances where the truth is
    known, and the onset and offset errors (ms) of each stance whose edge is measured."""
    margin = round(SCORE_MARGIN / trial.pace * trial.fps)
    hits = found = truths = 0
    onset, offset = [], []
    for foot, start, end in trial.stances:
        low, high = max(start - margin, 0), min(end + margin, labels.shape[1])
        window, known = labels[foot, low:high], trial.known[foot, low:high]
        truth = np.zeros(high - low, dtype=bool)
        truth[start - low:end - low] = True
        hits, found, truths = (hits + np.sum(window & truth & known), found + np.sum(window & known),
                               truths + np.sum(truth & known))
        run = contact_run(window, truth & known)
        if run is not None:
            # Stances cut by the trial's end, or shared with the other foot, have no measured
            # toe-off (or heel strike).
            if start - low == margin and trial.known[foot, start]:
                onset.append(abs(run[0] - (start - low)) / trial.fps * 1e3)
            if high - end == margin and trial.known[foot, end - 1]:
                offset.append(abs(run[1] - (end - low)) / trial.fps * 1e3)
    return (hits, found, truths), onset, offset


def pooled_scores(loaded, settings=None):
    """Per scenario: F1 over the scored frames of all trials, mean onset and offset errors (ms)."""
    pooled = {}
    for trial in loaded:
        for name, variant in scenarios(trial).items():
            counts, onset, offset = stance_counts(foot_labels(variant, settings), variant)
            total = pooled.setdefault(name, [np.zeros(3), [], []])
            total[0] += counts
            total[1] += onset
            total[2] += offset
    return {name: (2.0 * c[0] / max(c[1] + c[2], 1), float(np.mean(on)), float(np.mean(off)))
            for name, (c, on, off) in pooled.items()}


def contact_run(window, truth):
    """[start, end) of the detected contact that overlaps the true stance most, or None."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], window.astype(np.int8), [0]])))
    runs = edges.reshape(-1, 2)
    if not len(runs):
        return None
    overlap = [truth[a:b].sum() for a, b in runs]
    return tuple(runs[int(np.argmax(overlap))]) if max(overlap) > 0 else None


def trials(folder):
    return [load_trial(path) for path in sorted(Path(folder).glob("*.c3d"))]


def forceplate_rows(folder, settings=None):
    for trial in trials(folder):
        for name, variant in scenarios(trial).items():
            yield (trial.name, name, *score(foot_labels(variant, settings), variant))


def print_forceplate_table(folder):
    print(f"Force-plate truth ({folder}): foot contact = heel or toe "
          f"(targets F1 >= {TARGET_F1}, mean onset/offset error <= {TARGET_ERROR_MS:.0f} ms)")
    print(f"{'trial':<10} {'scenario':<13} {'F1':>6} {'onset':>8} {'offset':>8}")
    rows = list(forceplate_rows(folder))
    for trial, name, f1, onset, offset in rows:
        missed = f1 < TARGET_F1 or not onset <= TARGET_ERROR_MS or not offset <= TARGET_ERROR_MS
        print(f"{trial:<10} {name:<13} {f1:>6.3f} {onset:>6.1f}ms {offset:>6.1f}ms{'  MISSED' if missed else ''}")
    for name, (f1, onset, offset) in pooled_scores(trials(folder)).items():
        print(f"{'all trials':<10} {name:<13} {f1:>6.3f} {onset:>6.1f}ms {offset:>6.1f}ms")
    print_worst_trials(rows)
    return rows


def print_worst_trials(rows):
    """Per scenario, the trial with the lowest F1 and the largest onset and offset errors."""
    for scenario in dict.fromkeys(row[1] for row in rows):
        picked = [row for row in rows if row[1] == scenario]
        worst_f1 = min(picked, key=lambda row: row[2])
        worst_onset = max(picked, key=lambda row: np.nan_to_num(row[3]))
        worst_offset = max(picked, key=lambda row: np.nan_to_num(row[4]))
        print(f"worst      {scenario:<13} F1 {worst_f1[2]:.3f} ({worst_f1[0]}), onset {worst_onset[3]:.1f}ms "
              f"({worst_onset[0]}), offset {worst_offset[4]:.1f}ms ({worst_offset[0]})")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from benchmark import import_foot_lock

    import_foot_lock()
    print_forceplate_table(sys.argv[1] if len(sys.argv) > 1 else BUNDLED_TRIALS)
