"""A foot planted at heel and ball that the animation swivels on the spot (a turn in place, a
dancer's swivel): its labels say both points stand, its motion says one of them sweeps
round the other. Locked as labelled, the foot kept the heading it landed with, up to 90
degrees off the animation's, the ankle twisted against the shin, and it whipped round
when it lifted. Past a free turn the label of the point that sweeps eases out, so the
lock holds the other and the foot turns about it (:mod:`.offline_lock`'s rolling about the
pinned point), and the curves Foot Lock keys say so.
"""

import numpy as np

from .contacts import ease_out, eased_after, heights_along, run_ids, run_starts, up_cross
from .quaternion import dots, lengths

# Degrees a foot planted at heel and ball turns (in the input, since both were planted)
# before the point that sweeps lets go, fully SWIVEL_EASE_TURN degrees later (smoothly: no
# edge for capture noise to chatter across). Within it both hold where they landed: a
# planted foot's heading in a capture wobbles and drifts as the body rolls over it, 1-3
# degrees over most stances of the shared CMU walks and up to 9-12 on a turning walk's
# (cmu_01_01, cmu_131_02's standing start); letting a heel follow those from 5 degrees on
# slid it 9-14 mm there, out and back, for a few degrees of heading. A foot swivelled on
# purpose turns tens of degrees (cmu_131_03's 33 in 0.6 s).
SWIVEL_FREE_TURN = 15.0
SWIVEL_EASE_TURN = 10.0
SWIVEL_REPLANT = 0.1  # s: a point let go by a swivel is planted again over this, as the other lifts


def released_by_swivels(contacts, heel_contacts, toes, heels, up, legs, fps):
    """The toe and heel labels (L, F each, 0..1) with, where the feet at ``toes`` and
    ``heels`` (L, F, 3) stand on both and turn about ``up`` past ``SWIVEL_FREE_TURN`` since
    both landed, the label of the point that sweeps round the other eased out: the heel's in
    a turn on the ball, the ball's in a turn on the heel; once let go it stays free to the end
    of the stance on both, then eases back in over ``SWIVEL_REPLANT``. ``legs`` (L,): the legs
    labelled; ``fps`` their frame rate. New arrays where anything changes."""
    both = (contacts > 0) & (heel_contacts > 0) & np.asarray(legs, dtype=bool)[:, None]
    steps = both[:, 1:] & both[:, :-1]
    if not np.count_nonzero(steps):  # (ndarray.any's answer in one C call, without its layers)
        return contacts, heel_contacts
    up = np.asarray(up, dtype=float)
    since = _since_run_start(_turns(heels - toes, up) * steps, steps)
    over = np.abs(since) - np.radians(SWIVEL_FREE_TURN)
    if np.maximum.reduce(over, axis=None) <= 0.0:  # (ndarray.max's reduction, without its layers)
        return contacts, heel_contacts  # every foot within its free turn (a walk's usual case)
    swivelling = over > 0.0
    eased = np.minimum(np.maximum(over, 0.0) / np.radians(SWIVEL_EASE_TURN), 1.0)
    released = np.zeros(contacts.shape)
    released[:, 1:] = eased * eased * (3.0 - 2.0 * eased)  # each step's, on the frame it reaches
    # Let go, a point stays free while the stance lasts: held again as the input turned back it
    # was pinned 20-25 degrees off and stayed so, then whipped round at lift-off, and a foot
    # swivelled to and fro had its labels flicker. Where the other point lifts it is planted
    # again gently: at once, a ball still sweeping round a heel stopped dead (0.5 m/s in a
    # frame, 8-14 times the input's acceleration).
    ids = run_ids(both)
    released = np.maximum.accumulate(released + 2.0 * ids, axis=-1) - 2.0 * ids  # ids rise along a row
    released = eased_after(released * both, ease_out(np.arange(contacts.shape[-1]) / (SWIVEL_REPLANT * fps))[:, 0])
    # Per run, over its steps past the free turn, the point the input moves over twice as far
    # as the other sweeps round it. Where neither does (both slide alike, or the foot swings
    # about a far point: a walk along a tight arc) the input shows no point the foot turns
    # about, and both hold: letting the heel go there swung it 5 cm round in 0.15 s to catch
    # up the turn, where the input's heel crept (cmu_131_03 at frame 710, 120 fps).
    runs = run_ids(steps)
    count = runs.max() + 1
    ball, heel = (np.bincount(runs[swivelling], lengths(np.diff(points, axis=1))[swivelling], count)
                  for points in (toes, heels))
    sweeps = np.zeros((2,) + contacts.shape)  # the ball's, the heel's
    sweeps[:, :, 1:] = np.stack((ball > 2.0 * heel, heel > 2.0 * ball))[:, runs]
    return contacts * (1.0 - sweeps[0] * released), heel_contacts * (1.0 - sweeps[1] * released)


def _turns(vectors, up):
    """The signed turn (L, F-1) about the unit ``up`` of vectors (L, F, 3) from each frame to
    the next, of their parts across it: up . (a x b) is the across parts' own, and their dot
    product a . b less the product of the heights (:func:`.contacts.heights_along`)."""
    heights = heights_along(vectors, up)
    before, after = vectors[:, :-1], vectors[:, 1:]
    return np.arctan2(up_cross(before, after, up), dots(before, after) - heights[:, :-1] * heights[:, 1:])


def _since_run_start(steps, runs):
    """Per step (L, F-1), the sum of ``steps`` since the start of its run of ``runs`` steps,
    itself included (0 outside the runs)."""
    total = np.add.accumulate(steps, axis=-1)  # (the loop np.cumsum calls, without its layers)
    first = np.maximum.accumulate(np.where(run_starts(runs), np.arange(steps.shape[-1]), 0), axis=-1)
    rows = (np.arange(len(steps)) * steps.shape[-1])[:, None]
    return np.where(runs, total - (total - steps).take(first + rows), 0.0)
