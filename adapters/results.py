"""Foot Lock's own results, told apart from actions anyone else made or edited.

A rerun from a source whose ``<source>.footlock`` result already exists replaces that
result instead of piling up ``.footlock.001``, ``.002``... copies (Root Motion from Feet's
``.rootmotion`` alike), but only when the action of that name is provably the tool's
untouched output: it names the same source (the action, or the NLA tracks it replaced)
and the same tool, and its keys still match the digest stored when Foot Lock wrote it.
An action someone made under that name, or a result an animator edited since, is never
replaced (the new result then gets Blender's next free name); nor is a result another
object plays too (two characters sharing a source, as a glTF with two armatures imports),
or one fixed for another object's slot of an action they share (4.4+): that object keeps
it, and this one's result is one of the numbered copies. Contact curves are left out of
the digest: they carry their own stamps, and the edited ones are carried over to the new
result (see :func:`.armature.animator_contact_curves`).
"""

import hashlib
import re
import zlib

import bpy

from . import action_compat as compat
from . import sources
from .armature import CONTACT_PATHS

_DIGEST_PROPERTY = "foot_lock_digest"  # on a result: the digest of its keys as Foot Lock left them
# A digest stored now starts with this: a CRC-32 of the channels of the motion curves and
# of every key (:func:`~.action_compat.curves_checksum`). The digests stored before still
# tell the untouched results of earlier versions: its SHA-1 (:func:`_sha1_digest`, "2:"),
# and before that a hash of each curve's :func:`~.action_compat.keys_digest`
# (:func:`_per_curve_digest`, no prefix).
_DIGEST_FORMAT = "3:"
_SHA1_FORMAT = "2:"
# On a result (4.4+): the identifier of the slot whose curves Foot Lock fixed. Objects that
# share an action each play their own slot: a result fixed for one holds the others' curves
# as they were.
_SLOT_PROPERTY = "foot_lock_slot"


def _motion_curves(obj, action):
    """``(fcurve, (data_path, array_index))`` of every curve of ``action`` for ``obj`` but
    the contact curves."""
    return [(fcurve, channel) for fcurve, channel in compat.fcurve_channels(compat.channel_bag(obj, action))
            if not channel[0].endswith(CONTACT_PATHS)]


def _channel_names(motion):
    """The channels of :func:`_motion_curves` ``motion`` as one string, for digests."""
    return "".join(f"{path}[{index}]" for _, (path, index) in motion)


def _motion_digest(obj, action):
    """A digest of every key of ``action`` for ``obj`` but the contact curves', and of the
    channels they key."""
    motion = _motion_curves(obj, action)
    channels = zlib.crc32(_channel_names(motion).encode())
    return f"{_DIGEST_FORMAT}{compat.curves_checksum([fcurve for fcurve, _ in motion], channels):08x}"


def _sha1_digest(obj, action):
    """The digest results were stamped with before :data:`_DIGEST_FORMAT` (:data:`_SHA1_FORMAT`)."""
    motion = _motion_curves(obj, action)
    keys = compat.curves_digest([fcurve for fcurve, _ in motion])
    return _SHA1_FORMAT + hashlib.sha1(f"{_channel_names(motion)}{keys}".encode()).hexdigest()[:16]


def _per_curve_digest(obj, action):
    """The digest results were stamped with before :data:`_SHA1_FORMAT`."""
    motion = _motion_curves(obj, action)
    entries = zip(motion, compat.keys_digests([fcurve for fcurve, _ in motion]))
    # One update of all the entries hashes what one update per entry would.
    text = "".join(f"{path}[{index}]{keys}" for (_, (path, index)), keys in entries)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def untouched(obj, action):
    """Whether ``action``'s keys still match the digest stored when Foot Lock wrote it (its
    contact curves aside: an animator's edits there are carried to a fresh result)."""
    stored = action.get(_DIGEST_PROPERTY)
    if not isinstance(stored, str):
        return False
    digest = {_DIGEST_FORMAT: _motion_digest, _SHA1_FORMAT: _sha1_digest}.get(stored[:2], _per_curve_digest)
    return stored == digest(obj, action)


def motion_digest(obj, result):
    """What :func:`stamp` stores of ``result``'s keys: taken once its motion curves are
    written, it holds after contact curves are added (they are left out of it)."""
    return _motion_digest(obj, result)


def stamp(obj, result, digest=None):
    """Mark ``result`` as Foot Lock's output for ``obj`` as it stands now (after its last write).
    ``digest``: its :func:`motion_digest` taken since its motion curves' last write, where
    only contact curves were written after it."""
    result[_DIGEST_PROPERTY] = _motion_digest(obj, result) if digest is None else digest
    result[_SLOT_PROPERTY] = compat.slot_identifier(obj, result)


def made_for(obj, result):
    """Whether ``result`` holds ``obj``'s fix: stamped for the slot ``obj`` plays it with, or
    with no slot to tell (before 4.4, or stamped by an earlier version)."""
    stamped = result.get(_SLOT_PROPERTY)
    return not isinstance(stamped, str) or not stamped or stamped == compat.slot_identifier(obj, result)


def earlier_result(obj, source, name):
    """Foot Lock's untouched result of ``source`` (a :class:`~.sources.MotionSource`) that
    no other object plays: the action called ``name``, else the first of its numbered
    copies (``name.001`` ...; where another object kept ``name``, this object's result got
    the next free name), else None."""
    numbered = re.compile(re.escape(name) + r"\.\d{3,}")
    candidates = sorted(action.name for action in bpy.data.actions if numbered.fullmatch(action.name))
    for candidate in [name, *candidates]:
        earlier = bpy.data.actions.get(candidate)
        if earlier is not None and why_not_replaced(obj, source, earlier) is None:
            return earlier
    return None


def why_not_replaced(obj, source, earlier):
    """Why ``earlier`` is not Foot Lock's untouched result of ``source`` (a
    :class:`~.sources.MotionSource`) that no other object plays, to be made again in its
    place (words for a note), or None: it is."""
    if earlier.library is not None:
        return f"it is linked from {earlier.library.filepath!r}"
    if earlier == source.action:
        return "it is the action fixed"
    if not _same_source(source, earlier):
        return _made_from(earlier)
    if not played_only_by(obj, earlier):
        return "another object plays it"
    if not made_for(obj, earlier):
        return "it holds another object's fix (of that object's slot in an action both play)"
    if not untouched(obj, earlier):
        return "it was changed since Foot Lock made it"
    return None


def _same_source(source, earlier):
    if source.kind == sources.NLA:
        return list(earlier.get(sources.TRACKS_PROPERTY, ())) == [track.name for track in source.tracks]
    return sources.made_by(earlier) == source.suffix and sources.recorded_source(earlier) == source.action


def _made_from(result):
    """What ``result`` says it was made from (words for a note)."""
    tracks = list(result.get(sources.TRACKS_PROPERTY, ()))
    if tracks:
        return f"it is Foot Lock's bake of the NLA track{'s' * (len(tracks) > 1)} {', '.join(map(repr, tracks))}"
    recorded = sources.recorded_source(result)
    if recorded is not None:
        return f"it was made from {recorded.name!r}"
    return "it does not say what it was made from (an action made by hand, or by an early Foot Lock)"


def played_only_by(obj, action):
    """Whether no data-block but ``obj`` uses ``action`` (it may not use it either): a
    result another object plays is that object's animation, never replaced from this one."""
    return bpy.data.user_map(subset={action})[action] <= {obj}
