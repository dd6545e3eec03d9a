"""The only module that touches how actions store F-curves.

Blender 4.2/4.3 keep an action's F-curves in ``action.fcurves``. From 4.4 actions are
layered: F-curves live in a channelbag per slot, ``action.layers[i].strips[j]
.channelbag(slot)``, and the object says which slot it uses
(``animation_data.action_slot``); 5.0 removed ``Action.fcurves``. Everything else in the
add-on goes through the functions here and sees a *bag*: an object with ``fcurves`` and
``groups`` collections (the legacy action itself, or the slot's channelbag).

Keys are written in bulk (``foreach_set``), never one ``keyframe_insert`` per frame, and
read in bulk from each curve's key array (see :func:`_read_points`; ``foreach_get`` where
its layout is not the one checked).
"""

import ctypes
import hashlib
import operator
import zlib
from contextlib import contextmanager
from itertools import repeat

import bpy
import numpy as np

from .errors import AdapterError

LAYERED_ACTIONS = bpy.app.version >= (4, 4, 0)

_INTERPOLATION = {
    item.identifier: item.value for item in bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items
}
# Blender stores a key's enums (interpolation, handle types, easing, key type) as bytes: a
# uint8 buffer is copied straight through by foreach_get / foreach_set, any other integer
# type goes key by key through RNA, about ten times slower.
_ENUM = np.uint8
# A data-block name's room in bytes, its closing NUL included (read once: RNA's introspection
# costs 15 us a name, three names a click).
_NAME_LENGTH_MAX = bpy.types.ID.bl_rna.properties["name"].length_max
_AS_POINTER = bpy.types.bpy_struct.as_pointer  # mapped over many curves: no method lookup per curve
_FCURVE, _CHANNEL = operator.itemgetter(0), operator.itemgetter(1)  # of a listed (fcurve, channel)
_DATA_CHANNEL = operator.attrgetter("data_path", "array_index")  # an F-curve's channel, as listed


# --- slots and bags ---------------------------------------------------------------------


def action_slot(obj, action):
    """The slot of ``action`` that animates ``obj`` (4.4+), or None.

    The object's assigned slot when ``action`` is its action, else the slot the object
    last used (by identifier), else the first slot for objects.
    """
    if not LAYERED_ACTIONS or action is None:
        return None
    anim = obj.animation_data
    if anim is not None and anim.action == action and anim.action_slot is not None:
        return anim.action_slot
    last = anim.last_slot_identifier if anim is not None else ""
    for slot in action.slots:
        if last and slot.identifier == last:
            return slot
    for slot in action.slots:
        if slot.target_id_type in {"OBJECT", "UNSPECIFIED"}:
            return slot
    return None


def channel_bag(obj, action, create=False):
    """The F-curve container of ``action`` for ``obj``: has ``.fcurves`` and ``.groups``.

    With ``create`` a missing slot, layer, keyframe strip and channelbag are made (4.4+).
    Returns None when the action holds nothing for the object and ``create`` is false.
    """
    if action is None:
        return None
    if not LAYERED_ACTIONS:
        return action
    if _bags is None:
        return _find_bag(obj, action, create)
    key = obj, action.session_uid  # (an object hashes and compares by its address)
    bag = _bags.get(key)
    if bag is None:
        bag = _find_bag(obj, action, create)
        if bag is not None:
            _bags[key] = bag
    return bag


def _find_bag(obj, action, create):
    """:func:`channel_bag` of ``obj`` and ``action`` (4.4+), as Blender holds it now."""
    slot = action_slot(obj, action)
    if slot is None:
        if not create:
            return None
        slot = action.slots.new(id_type="OBJECT", name=obj.name)
        anim = obj.animation_data
        if anim is not None and anim.action == action:
            anim.action_slot = slot
    bag = _slot_bag(action, slot)
    if bag is not None or not create:
        return bag
    layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
    strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type="KEYFRAME")
    return strip.channelbag(slot, ensure=True)


def _slot_bag(action, slot):
    """The F-curve container of ``slot`` in ``action`` (4.4+), or None."""
    for layer in action.layers:
        for strip in layer.strips:
            bag = strip.channelbag(slot)
            if bag is not None:
                return bag
    return None


def slot_identifier(obj, action):
    """The identifier of the slot of ``action`` that animates ``obj`` ("" before 4.4, or
    with none): names the curves :func:`bag_of_slot` finds again, with no object to ask."""
    slot = action_slot(obj, action)
    return "" if slot is None else slot.identifier


def bag_of_slot(action, identifier):
    """The F-curve container of ``action`` for the slot ``identifier`` (see
    :func:`slot_identifier`; the action itself before 4.4), or None."""
    if not LAYERED_ACTIONS:
        return action
    slot = next((slot for slot in action.slots if slot.identifier == identifier), None)
    return None if slot is None else _slot_bag(action, slot)


def every_bag(action):
    """Every F-curve container of ``action``: each slot's in each strip (4.4+), else the action."""
    if not LAYERED_ACTIONS:
        return [action]
    return [bag for layer in action.layers for strip in layer.strips for bag in strip.channelbags]


def iter_fcurves(obj, action):
    """All F-curves of ``action`` that animate ``obj`` (empty when there are none); within
    :func:`remembered_keys` those its bag was listed with, where it was (see
    :func:`fcurve_channels`): no new Python object a curve (the cyclic check of a click's
    source goes through 96)."""
    bag = channel_bag(obj, action)
    if bag is None:
        return iter(())
    listing = None if _listed is None else _listing(bag, bag.id_data.session_uid)
    return iter(bag.fcurves) if listing is None else map(_FCURVE, listing[0])


def fcurve_table(bag):
    """``{(data_path, array_index): fcurve}`` of a bag (one pass instead of many finds); within
    :func:`remembered_keys` made once a listing of the bag (see :func:`fcurve_channels`) and
    copied (a click asks for five tables of two bags)."""
    if bag is None or _tables is None:
        return {channel: fcurve for fcurve, channel in fcurve_channels(bag)}
    uid = bag.id_data.session_uid
    key = uid, _AS_POINTER(bag)
    listing = _listing(bag, uid)
    if listing is None:
        fcurve_channels(bag)
        listing = _listed[key]
    made = _tables.get(key)
    if made is None or made[0] is not listing[0]:  # made of an earlier listing (the bag has had curves added)
        made = _tables[key] = listing[0], {channel: fcurve for fcurve, channel in listing[0]}
    return dict(made[1])


def fcurve_channels(bag):
    """``(fcurve, (data_path, array_index))`` of every curve of a bag (or None: none), in
    order. Within :func:`remembered_keys` each curve's channel is read once, a copy's
    curves have their source's (see :func:`_remember_copies`) and a bag listed before is
    not listed again while it has as many curves."""
    if bag is None:
        return []
    if _channels is None:
        return [(fcurve, (fcurve.data_path, fcurve.array_index)) for fcurve in bag.fcurves]
    uid = bag.id_data.session_uid
    known = _listing(bag, uid)
    if known is not None:
        return list(known[0])
    channels = _channels.setdefault(uid, {})
    fcurves = list(bag.fcurves)
    pointers = list(map(_AS_POINTER, fcurves))
    if channels:  # a copy's curves have their source's channels: the others are read
        for fcurve, pointer in zip(fcurves, pointers):
            if channels.get(pointer) is None:
                channels[pointer] = fcurve.data_path, fcurve.array_index
    else:  # the action's first listing in the job: every curve's read in one pass of attrgetter's own
        channels.update(zip(pointers, map(_DATA_CHANNEL, fcurves)))
    listed = list(zip(fcurves, map(channels.__getitem__, pointers)))
    _listed[uid, _AS_POINTER(bag)] = listed, pointers
    return list(listed)


def find_fcurve(bag, data_path, index=0):
    return None if bag is None else bag.fcurves.find(data_path, index=index)


def new_fcurve(bag, data_path, index=0, group=""):
    """A new F-curve in ``bag``, put into the group ``group`` (created when missing)."""
    if not LAYERED_ACTIONS:
        return bag.fcurves.new(data_path, index=index, action_group=group)
    # Channelbag F-curves take a group name only from 5.0: link the group by hand (4.4+).
    fcurve = bag.fcurves.new(data_path, index=index)
    if group:
        fcurve.group = bag.groups.get(group) or bag.groups.new(group)
    return fcurve


# --- assigning actions ------------------------------------------------------------------


def assign_action(obj, action, slot_identifier=""):
    """Make ``action`` the object's action; on 4.4+ make sure a slot is assigned too.

    The slot with ``slot_identifier`` is preferred, then the one Blender picks on
    assignment, then the first slot for objects; an action without one gets a new slot.
    """
    if obj.type == "ARMATURE" and obj.pose is None:
        # Blender 5.0 crashes when an action is assigned to an armature without a pose.
        raise AdapterError(
            f"armature {obj.name!r} has no pose yet: link it to the scene and let the view layer update"
        )
    anim = obj.animation_data or obj.animation_data_create()
    if anim.use_tweak_mode:
        raise AdapterError(f"{obj.name!r} is in NLA tweak mode: leave tweak mode first")
    anim.action = action
    if not LAYERED_ACTIONS:
        return
    if _bags is not None:
        _bags.clear()  # the object's slot changes: its bags are found again
    wanted = next(
        (slot for slot in action.slots if slot_identifier and slot.identifier == slot_identifier), None
    )
    if wanted is None and anim.action_slot is None:
        wanted = action_slot(obj, action) or action.slots.new(id_type="OBJECT", name=obj.name)
    if wanted is not None and anim.action_slot != wanted:
        anim.action_slot = wanted
    if anim.action_slot is None:
        raise AdapterError(f"action {action.name!r} has no slot that can animate {obj.name!r}")


def suffixed_name(stem, suffix):
    """``stem + suffix`` as a data-block name: ``stem`` shortened (by whole characters) where
    the two would not fit in Blender's name length, so the suffix survives. Blender cuts a
    name at its limit (63 bytes of UTF-8 before 5.0): a long action's ``.footlock`` came out
    ``.fo``, and its rerun, unable to find it, made another."""
    room = _NAME_LENGTH_MAX - 1 - len(suffix.encode())  # less the closing NUL
    return stem.encode()[: max(room, 0)].decode(errors="ignore") + suffix


def copy_action(obj, action, name):
    """A copy of ``action`` named ``name`` (Blender adds a suffix if taken), assigned to
    ``obj`` with the slot it used before.

    When the object held the only user of ``action``, the original gets a fake user so it
    is not lost when the file is saved.
    """
    if obj.animation_data is not None and obj.animation_data.use_tweak_mode:
        raise AdapterError(f"{obj.name!r} is in NLA tweak mode: leave tweak mode first")
    slot = action_slot(obj, action)
    slot_identifier = slot.identifier if slot is not None else ""
    source_bag = channel_bag(obj, action)
    duplicate = action.copy()
    duplicate.name = name
    assign_action(obj, duplicate, slot_identifier)
    if action.users == 0:
        action.use_fake_user = True
    _remember_copies(source_bag, channel_bag(obj, duplicate))
    return duplicate


# --- keys remembered within one job -----------------------------------------------------

# A click reads its source's curves, copies them into a result, rewrites some and digests
# the result (see :mod:`.results`). Within ``remembered_keys()`` the keys read or written
# are kept with their interpolation (where it was read with them, see :func:`_read_points`,
# or written), and a copy's curves share their source's, so the digest reads none of them
# back.
# {action session_uid: {F-curve address: ((count, 2) float32 keys, (count,) interpolation
# codes or None where only the keys were read), or None: nothing}}, or None outside. Kept per
# action so a copy's are made in one pass (see :func:`_remember_copies`).
_remembered = None
# The channels of the curves listed in there, the same way: {action session_uid: {F-curve
# address: (data_path, array_index), or None}}, or None outside (see :func:`fcurve_channels`)
_channels = None
_NOTHING = {}  # an action nothing is remembered of (never written)
# The curves of each bag as last listed, in order: {(action session_uid, bag address):
# ([(fcurve, channel)] as :func:`fcurve_channels` gives them, [F-curve address])}, or None
# outside
_listed = None
# The tables of those bags: {(action session_uid, bag address): (the listing's [(fcurve,
# channel)] it was made of, {channel: fcurve})}, or None outside (see :func:`fcurve_table`)
_tables = None
# The bags :func:`channel_bag` found in there: {(object, action session_uid): bag}, or None
# outside; forgotten when an object is assigned an action (its slot may change). A click
# asks a dozen times, at 5 us a search of the action's slots, layers and strips (4.4+).
_bags = None


@contextmanager
def remembered_keys():
    """Keys (and channels, and bags) read or written in here are not read again in here (one
    job: outside it, anyone may edit any curve). Usable as a decorator."""
    global _remembered, _channels, _listed, _tables, _bags
    outer = _remembered, _channels, _listed, _tables, _bags
    if _remembered is None:
        _remembered, _channels, _listed, _tables, _bags = {}, {}, {}, {}, {}
    try:
        yield
    finally:
        _remembered, _channels, _listed, _tables, _bags = outer


def _curve_key(fcurve, uid=None):
    """What ``fcurve``'s keys are remembered under; ``uid``, its action's session id, when
    the caller read it once for many curves of the action."""
    return fcurve.id_data.session_uid if uid is None else uid, fcurve.as_pointer()


def _action_uid(fcurves):
    """The session id of the action of ``fcurves`` (curves of one action; None without any)."""
    return fcurves[0].id_data.session_uid if len(fcurves) else None


def _known(key, count):
    """What is remembered of the curve under ``key`` (see :func:`_curve_key`) while it still
    has ``count`` keys: (keys, interpolation codes or None), or None."""
    return _still(_remembered_of(key[0]).get(key[1]), count)


def _remembered_of(uid):
    """What is remembered of the curves of the action ``uid``: {F-curve address: (keys,
    interpolation codes or None), or None}."""
    return _remembered.get(uid, _NOTHING) if _remembered is not None else _NOTHING


def _still(known, count):
    """``known`` (keys, interpolation codes or None), or None, while its curve still has ``count`` keys."""
    return known if known is not None and len(known[0]) == count else None


def _forget(fcurve):
    if _remembered is not None:
        uid, pointer = _curve_key(fcurve)
        _remembered.get(uid, _NOTHING).pop(pointer, None)


def _remember_copies(source_bag, copy_bag):
    """The curves of ``copy_bag`` hold the keys and channels of ``source_bag``'s: the one in
    the same place (Blender copies a bag's curves in their order). Where the source was
    listed (:func:`fcurve_channels`), so is the copy, from the same pass over its curves."""
    if _remembered is None or source_bag is None or copy_bag is None:
        return
    uid, copy_uid = source_bag.id_data.session_uid, copy_bag.id_data.session_uid
    source = _listing(source_bag, uid)
    copies = list(copy_bag.fcurves)
    copy_pointers = list(map(_AS_POINTER, copies))
    pointers = list(map(_AS_POINTER, source_bag.fcurves)) if source is None else source[1]
    # Each copy's entry (None where its source has none) in one pass of dict's own.
    for table in (_remembered, _channels):
        known = table.get(uid)
        if known:
            table.setdefault(copy_uid, {}).update(zip(copy_pointers, map(known.get, pointers)))
    if source is not None and len(copies) == len(source[1]):
        listed = list(zip(copies, map(_CHANNEL, source[0])))
        _listed[copy_uid, _AS_POINTER(copy_bag)] = listed, copy_pointers


def _listing(bag, uid):
    """What :func:`fcurve_channels` listed of ``bag`` (``uid``, its action's session id):
    ([(fcurve, channel)], [F-curve address]) while the bag still has as many curves (a job
    adds curves, it removes none: as many are the same), else None."""
    listed = _listed.get((uid, _AS_POINTER(bag)))
    return listed if listed is not None and len(listed[1]) == len(bag.fcurves) else None


# --- keys read (and new keys set) where Blender keeps them --------------------------------

# foreach_get of ``co`` costs about 40 ns a key: RNA reads it through accessor functions,
# key by key (a 300-key curve: 12 us, where its interpolation, a plain byte, takes 2 us).
# An F-curve keeps its keys in one array of BezTriple structs (DNA ``FCurve.bezt``), 72
# bytes each: a key's frame and value are floats 3 and 4 (``vec[1]``, bytes 12-19), its
# interpolation is byte 48 (``ipo``). Read there, both take about 2 us a curve. The layout
# is checked once a session against what RNA reads of the first curve read
# (:func:`_layout_holds`); where it does not hold (a Blender whose struct differs), keys are
# read through RNA. Written there only where every key of a curve is replaced (:func:`_set_keys`):
# each key's 72 bytes as ``keyframe_points.add`` makes it with RNA's ``co_ui`` and ``interpolation``
# set (RNA's setters keep no cache: they set these fields and nothing else), into the keys ``add``
# has just made or, as many, over the curve's own (no new array: the action tagged for the
# depsgraph as ``clear`` and ``add`` tag it); every other write goes through RNA.
_BEZT_BYTES = 72
# The two fields read of a BezTriple, as one numpy record: a key's frame and value as one
# 8-byte item (a complex64: the same bits; numpy steps through the structs a key at a time,
# not a float at a time) and its interpolation code.
_BEZT = np.dtype({"names": ["co", "ipo"], "formats": [np.complex64, np.uint8], "offsets": [12, 48],
                  "itemsize": _BEZT_BYTES})
# A new key as it is keyed (:func:`_new_keys`): its left handle, key and right handle
# (``vec[0..2]``'s x and y as complex64 items, their z left at 0) and its interpolation code.
_NEW_BEZT = np.dtype({"names": ["left", "co", "right", "ipo"], "formats": [np.complex64] * 3 + [np.uint8],
                      "offsets": [0, 12, 24, 48], "itemsize": _BEZT_BYTES})
_KEY_BYTES = np.dtype((np.void, _BEZT_BYTES))  # a BezTriple whole
# A key as ``keyframe_points.add`` makes it (Blender's fixed defaults, not the preferences: its
# selection, handle types and interpolation set, every other byte zero), read from the first key
# made where the layout holds (:func:`_set_keys`); None before.
_made_key = None
_records = None  # the BezTriples last made to be copied into many curves (see :func:`_key_records`)
_key_array_layout = None  # whether the layout holds: None until a curve of 2+ keys was checked
_KEY_ARRAY_TYPES = {}  # count -> the ctypes type of count BezTriples' bytes
# Of many curves at once (:func:`read_curve_rows`) the keys are gathered by numpy, not read
# curve by curve (a click's 96 curves: 200 -> 50 us): an F-curve (DNA ``FCurve``) keeps its
# modifiers' list (``modifiers.first``, bytes 32-39), its key array's address (``bezt``,
# 48-55) and its key count (``totvert``, 64-67), read of every curve in one gather
# (:func:`_curve_heads`) where the layout is checked against RNA (once a session, on a
# curve with keys: :func:`_heads_hold`), and the keys are then gathered from those addresses.
_FCURVE_HEAD = np.dtype({"names": ["modifiers", "bezt", "count"], "formats": [np.uintp, np.uintp, np.uint32],
                         "offsets": [32, 48, 64], "itemsize": 68})
_fcurve_layout = None  # whether that layout holds: None until a curve with keys was checked
# numpy's largest array in bytes: a gather's window (see :func:`_gather`) may not be larger.
_WINDOW_MAX = np.iinfo(np.intp).max


class _Memory:
    """Blender's memory from ``address`` as numpy's array interface describes it: read-only
    items ``typestr`` in ``shape`` with ``strides`` in bytes (as ``as_strided`` makes its
    views). Nothing is read of it but what is indexed."""

    def __init__(self, address, shape, strides, typestr):
        self.__array_interface__ = {"data": (address, True), "shape": shape, "strides": strides,
                                    "typestr": typestr, "version": 3}


def _gather(addresses, offset, count, stride, typestr, rows=None):
    """(len(addresses), count) items ``typestr`` at ``offset`` bytes into each of ``count``
    structs of ``stride`` bytes from each of ``addresses`` (uintp), copied in one numpy
    gather: the rows of a window whose row ``i`` starts ``i`` bytes after the lowest address
    (``rows``, :func:`_window_rows` of ``addresses``, where the caller gathers them again).
    Addresses too far apart for numpy to shape that window are gathered one by one."""
    low, span, index = _window_rows(addresses) if rows is None else rows
    if span * count * np.dtype(typestr).itemsize <= _WINDOW_MAX:
        window = np.asarray(_Memory(low + offset, (span, count), (1, stride), typestr))
        return window[index]
    return np.stack([np.asarray(_Memory(address + offset, (count,), (stride,), typestr))
                     for address in addresses.tolist()])


def _window_rows(addresses):
    """The lowest of ``addresses`` (uintp), the height of :func:`_gather`'s window over them
    and each one's row in it (intp: made so by the subtraction, not by a copy after it)."""
    low = int(addresses.min())
    return low, int(addresses.max()) - low + 1, np.subtract(addresses, low, dtype=np.intp)


def _key_rows(arrays, count):
    """The keys (len(arrays), count, 2) float32 and interpolation codes (len(arrays), count)
    uint8 of key arrays of ``count`` keys each at the addresses ``arrays`` (uintp), where
    :func:`_read_points` reads them (the layout checked); both gathered from one window."""
    rows = _window_rows(arrays)
    keys = _gather(arrays, 12, count, _BEZT_BYTES, "<c8", rows)  # frame and value as one complex64
    return (keys.view(np.float32).reshape(len(arrays), count, 2),
            _gather(arrays, 48, count, _BEZT_BYTES, "|u1", rows))


def _read_points(curves_points, co):
    """The keys of the keyframe points of curves of as many keys each (``curves_points``, a
    list) into the rows of ``co`` (curves, count, 2) float32, and their interpolation codes
    (curves, count) uint8, or None where read through RNA (the codes not). Read from the key
    arrays of all the curves at once (:func:`_key_rows`)."""
    count = co.shape[1]
    if count < 2 or not (_key_array_layout or _layout_holds(curves_points[0], count)):  # (checked once)
        for points, keys in zip(curves_points, co):
            points.foreach_get("co", keys.reshape(-1))
        return None
    co[:], codes = _key_rows(np.array([points[0].as_pointer() for points in curves_points], dtype=np.uintp), count)
    return codes


def _key_array(points, count, records=_BEZT):
    """The BezTriple array of keyframe ``points`` as (count,) ``records`` (:data:`_BEZT` or
    :data:`_NEW_BEZT`): Blender's memory, copied from or set at once, never kept."""
    kind = _KEY_ARRAY_TYPES.get(count)
    if kind is None:
        kind = _KEY_ARRAY_TYPES[count] = ctypes.c_uint8 * (count * _BEZT_BYTES)
    return np.frombuffer(kind.from_address(points[0].as_pointer()), dtype=records)


def _new_keys(records, co, mode):
    """Key BezTriples ``records`` (..., count) of :data:`_NEW_BEZT` that hold keys as
    ``keyframe_points.add`` makes them at (..., count, 2) float32 ``co`` with interpolation
    codes ``mode``: the bytes ``foreach_set`` of ``co_ui`` (the key, its handles moved with it
    from 0, 0 onto it) and of ``interpolation`` leave, without RNA's two accessor calls a key
    (a click's 27 curves of 317 keys: 310 -> 140 us)."""
    records["left"] = records["co"] = records["right"] = co.view(np.complex64)[..., 0]
    records["ipo"] = mode


def _key_records(shape):
    """BezTriples (curves, count) of :data:`_NEW_BEZT` for :func:`_set_keys` to key, each as
    ``keyframe_points.add`` makes it but for what :func:`_new_keys` sets. The last ones are
    made again (their other bytes stay): a new array as large (a click's 27 curves of 317
    keys: 600 kB) costs its memory's first touch, page by page, as much as the copies."""
    global _records
    if _records is None or _records.shape != shape:
        _records = np.empty(shape, dtype=_NEW_BEZT)
        _records.view(_KEY_BYTES)[...] = _made_key
    return _records


def _layout_holds(points, count):
    """Whether keys lie where :func:`_read_points` reads them, checked on the first curve of
    2+ keys (``points``, ``count`` keys) against RNA: the step between two keys, every
    key's frame, value and interpolation."""
    global _key_array_layout
    if _key_array_layout is None:
        expected = np.empty((count, 2), dtype=np.float32)
        points.foreach_get("co", expected.reshape(-1))
        holds = points[1].as_pointer() - points[0].as_pointer() == _BEZT_BYTES
        if holds:
            keys = _key_array(points, count)
            holds = (np.array_equal(keys["co"].copy().view(np.float32).reshape(count, 2), expected, equal_nan=True)
                     and np.array_equal(keys["ipo"], _key_enums(points, "interpolation", count)))
        _key_array_layout = bool(holds)
    return _key_array_layout


# --- keys in bulk -----------------------------------------------------------------------


def _key_arrays(fcurve, uid=None, points=None):
    """The keys (count, 2) of ``fcurve`` as frame, value (float32, as Blender stores them);
    read-only when remembered. ``uid`` (see :func:`_curve_key`) and ``points``, the curve's
    keyframe points, spare reading them again where the caller has them (to read many
    curves into one buffer, see :func:`_read_rows`)."""
    return _keys_and_modes(fcurve, uid, points)[0]


def _keys_and_modes(fcurve, uid=None, points=None):
    """:func:`_key_arrays` of ``fcurve`` and its interpolation codes (count,) uint8, or None
    where they were not read with the keys (see :func:`_read_points`)."""
    points = fcurve.keyframe_points if points is None else points
    count = len(points)
    key = _curve_key(fcurve, uid)
    known = _known(key, count)
    if known is not None:
        return known
    rows = np.empty((1, count, 2), dtype=np.float32)
    codes = _read_points([points], rows)
    co, modes = rows[0], None if codes is None else codes[0]
    if _remembered is not None:
        co.flags.writeable = False  # shared by every later reader
        _remembered.setdefault(key[0], {})[key[1]] = co, modes
    return co, modes


def key_frame_rows(fcurves):
    """The frames of the keys of each of ``fcurves`` (curves of one action), an array per curve
    (float32, as Blender stores them; none read again where remembered)."""
    uid = _action_uid(fcurves)
    return [_key_arrays(fcurve, uid)[:, 0] for fcurve in fcurves]


def _key_enums(points, name, count):
    values = np.empty(count, dtype=_ENUM)
    points.foreach_get(name, values)
    return values


def _keys_outside(fcurve, span, known=None):
    """Whether ``fcurve`` has keys outside ``span``; ``known``, what is remembered of it (see
    :func:`_known`), spares asking Blender."""
    # The frames of the first and last key, as FCurve.range() gives them (sorted or not).
    first, last = fcurve.range() if known is None else (float(known[0][0, 0]), float(known[0][-1, 0]))
    return first < span[0] - 0.5 or last > span[1] + 0.5


_KEPT_FLOATS = ("handle_left", "handle_right")
_KEPT_ENUMS = ("interpolation", "handle_left_type", "handle_right_type", "easing", "type")


def _kept_keys(fcurve, first, last):
    """The keys outside ``first .. last`` with everything that makes them (value,
    interpolation, handles), or None when there are none."""
    points = fcurve.keyframe_points
    count = len(points)
    co = _key_arrays(fcurve)
    outside = (co[:, 0] < first - 0.5) | (co[:, 0] > last + 0.5)
    if not outside.any():
        return None
    kept = {"co": co[outside]}
    for name in _KEPT_FLOATS:
        buffer = np.empty(count * 2, dtype=np.float32)
        points.foreach_get(name, buffer)
        kept[name] = buffer.reshape(count, 2)[outside]
    for name in _KEPT_ENUMS:
        kept[name] = _key_enums(points, name, count)[outside]
    return kept


def write_keys(fcurve, frames, values, interpolation="LINEAR", keep_outside=False, span=None):
    """Replace the keys of ``fcurve`` by one key per (frame, value), in bulk.

    With ``keep_outside`` the existing keys outside ``span`` (first, last frame; by
    default the given frames' extent) stay as they were (value, interpolation,
    handles); only the span is replaced.
    """
    frames = np.asarray(frames, dtype=np.float64).ravel()
    values = np.asarray(values, dtype=np.float64).ravel()
    if frames.shape != values.shape:
        raise ValueError("frames and values differ in length")
    first, last = span if span is not None else (frames.min(), frames.max())
    points = fcurve.keyframe_points
    kept = None
    count = len(points)
    if keep_outside and count and len(frames) and _keys_outside(fcurve, (first, last)):
        kept = _kept_keys(fcurve, first, last)
    points.clear()
    new_co = np.empty((len(frames), 2), dtype=np.float32)
    new_co[:, 0], new_co[:, 1] = frames, values
    mode = _modes(interpolation, len(frames))
    if kept is None:
        points.add(len(frames))
        _set_keys([fcurve], [points], new_co[None], mode, _needs_update(frames, interpolation))
        return
    order = np.argsort(np.concatenate((kept["co"][:, 0], new_co[:, 0])), kind="stable")
    total = len(order)
    is_new = order >= len(kept["co"])  # the kept keys come first before sorting
    co = np.concatenate((kept["co"], new_co))[order]
    points.add(total)
    points.foreach_set("co", co.ravel())
    points.foreach_set("interpolation", np.concatenate((kept["interpolation"], mode))[order])
    for name in _KEPT_ENUMS[1:]:
        current = _key_enums(points, name, total)  # freshly added keys carry Blender's defaults
        current[~is_new] = kept[name][order[~is_new]]
        points.foreach_set(name, current)
    for name in _KEPT_FLOATS:
        handles = co.copy()
        handles[~is_new] = kept[name][order[~is_new]]
        points.foreach_set(name, handles.ravel())
    fcurve.update()  # the new keys' automatic handles, next to the kept ones
    _forget(fcurve)


def _modes(interpolation, count):
    """``count`` keys' interpolation codes (uint8) of ``interpolation``: np.full's values
    without its Python wrapper (a third of its cost, on every key write)."""
    mode = np.empty(count, dtype=_ENUM)
    mode.fill(_INTERPOLATION[interpolation])
    return mode


def _needs_update(frames, interpolation):
    """Whether new keys on ``frames`` need ``fcurve.update()``: not, as in Blender's own
    Bake Action, when they are in order, one per frame, and linear or constant (such keys
    do not use their handles)."""
    return interpolation == "BEZIER" or bool((frames[1:] <= frames[:-1]).any())  # np.diff's cost is its wrapper


def _set_keys(fcurves, curves_points, co, mode, update, keys=None, own=False):
    """Key each of ``fcurves`` (curves of one action; ``curves_points``, their keyframe points,
    each holding as many keys as ``co`` has a row, every one replaced: keys
    ``keyframe_points.add`` has just made or, with ``own``, some curves' own) at its row of
    ``co`` (curves, count, 2) float32 with interpolation codes ``mode`` (``keys``, what the
    curves are remembered under, where the caller has them: see :func:`_curve_key`)."""
    global _made_key
    count = co.shape[1]
    if _key_array_layout and count:  # checked on keys read before (new keys hold zeros: they cannot tell)
        if _made_key is None:  # no curve's own keys are replaced before: these were just made
            _made_key = np.void(bytes(_key_array(curves_points[0], 1, _KEY_BYTES)[0]))
        if len(fcurves) == 1 and not own:
            _new_keys(_key_array(curves_points[0], count, _NEW_BEZT), co[0], mode)
        else:
            # Every curve's keys made at once, then each curve's copied into its key array in
            # one call: not five numpy calls a curve (a click's 27 curves of 317 keys: 146 -> 93 us alone).
            records = _key_records(co.shape[:2])
            _new_keys(records, co, mode)
            address, size = records.ctypes.data, count * _BEZT_BYTES
            for points in curves_points:
                ctypes.memmove(points[0].as_pointer(), address, size)
                address += size
    else:
        for points, keys in zip(curves_points, co):
            points.foreach_set("co_ui", keys.reshape(-1))  # moves each new key's handles with it ("co" leaves them at 0, 0)
            points.foreach_set("interpolation", mode)
    if update:
        for fcurve in fcurves:
            fcurve.update()
            _forget(fcurve)
    elif _remembered is not None:
        if co.flags.writeable:  # shared by every later reader
            co.flags.writeable = mode.flags.writeable = False
        for keys_of, (uid, pointer) in zip(co, keys or map(_curve_key, fcurves)):
            _remembered.setdefault(uid, {})[pointer] = keys_of, mode


def write_curves(fcurves, frames, rows, interpolation="LINEAR", keep_outside=False):
    """:func:`write_keys` of each of ``fcurves`` (curves of one action) with its row of
    ``rows`` (len(fcurves), F) on the same ``frames``: what does not depend on the curve is
    done once (on a short clip that is most of the cost of a key write in Python). A curve
    of as many keys, none outside the frames, gets its new keys over its own (see
    :func:`_set_keys`): no ``keyframe_points.clear`` and ``add`` a curve, a new key array each."""
    frames = np.asarray(frames, dtype=np.float64).ravel()
    rows = np.asarray(rows, dtype=np.float64).reshape(len(fcurves), len(frames))
    if not len(frames):
        raise ValueError("no frames to key")
    span = (frames.min(), frames.max())
    co = np.empty((len(fcurves), len(frames), 2), dtype=np.float32)
    co[..., 0], co[..., 1] = frames, rows
    mode = _modes(interpolation, len(frames))
    co.flags.writeable = mode.flags.writeable = False  # remembered rows are shared by every later reader
    uid = _action_uid(fcurves)
    overwritten = _made_key is not None and _key_array_layout  # every byte of a key set as add makes it
    keyed, keyed_points, keys, rows_keyed = [], [], [], []  # the curves keyed here, and what of them
    in_place = False
    for row, (fcurve, pointer) in enumerate(zip(fcurves, map(_AS_POINTER, fcurves))):
        points = fcurve.keyframe_points
        count = len(points)
        if keep_outside and count and _keys_outside(fcurve, span, _known((uid, pointer), count)):
            write_keys(fcurve, frames, rows[row], interpolation, keep_outside=True)
            continue
        if overwritten and count == len(frames):
            in_place = True
        else:
            points.clear()
            points.add(len(frames))
        keyed.append(fcurve)
        keyed_points.append(points)
        keys.append((uid, pointer))
        rows_keyed.append(row)
    if in_place:
        fcurves[0].id_data.update_tag(refresh={"TIME"})  # what clear and add tag (ID_RECALC_ANIMATION)
    if keyed:
        co_keyed = co if len(keyed) == len(fcurves) else co[rows_keyed]
        _set_keys(keyed, keyed_points, co_keyed, mode, _needs_update(frames, interpolation), keys, in_place)


def keys_digest(fcurve):
    """A short digest of the curve's keys (frames, values, interpolation): changes when
    anyone edits a key."""
    return keys_digests([fcurve])[0]


def keys_digests(fcurves):
    """:func:`keys_digest` of each of ``fcurves`` (curves of one action): the action's
    session id read once, every curve's interpolation codes joined and made int32 in one
    pass, none read again where they were read with the keys or just written (see
    :func:`remembered_keys`)."""
    points = [fcurve.keyframe_points for fcurve in fcurves]
    found = _keys_and_modes_of(fcurves, points)
    codes = _interpolation_codes(found, points).astype(np.int32)  # the digests stored so far hashed int32 codes
    digests = []
    start = 0
    for co, _ in found:
        end = start + len(co)
        digest = hashlib.sha1(co)  # hashed in place (keys are kept C-contiguous), not copied to bytes first
        digest.update(codes[start:end])
        digests.append(digest.hexdigest()[:16])
        start = end
    return digests


def curves_digest(fcurves):
    """One short digest of every key (frame, value, interpolation) of ``fcurves`` (curves of
    one action, in order) and of how many keys each has: changes when anyone edits, adds
    or removes a key of any of them. Cheaper than :func:`keys_digests` of them all: one
    hash over all the keys (see :func:`_digested_parts`)."""
    digest = hashlib.sha1()
    for part in _digested_parts(fcurves):
        digest.update(part)
    return digest.hexdigest()[:16]


def curves_checksum(fcurves, start=0):
    """The CRC-32 of what :func:`curves_digest` hashes, continued from the CRC-32 ``start``,
    in a third of SHA-1's instructions (a click's 96 curves: 3.3M -> 1.0M). Enough to tell
    an edited result (one stored value against one action, not a search for collisions): an
    edit within 4 bytes (a key's frame, value or interpolation) always changes it, any other
    goes unseen with a chance of 2**-32."""
    checksum = start
    for part in _digested_parts(fcurves):
        checksum = zlib.crc32(part, checksum)
    return checksum


def _digested_parts(fcurves):
    """What digests of ``fcurves`` hash, in order: how many keys each curve has (where one
    curve's keys end), then each curve's keys, hashed in place (they are kept C-contiguous,
    not copied to bytes first), then all their interpolation codes as Blender stores them
    (uint8); none read where remembered (see :func:`remembered_keys`)."""
    points = [fcurve.keyframe_points for fcurve in fcurves]
    found = _keys_and_modes_of(fcurves, points)
    yield np.array([len(co) for co, _ in found], dtype=np.int64)
    for co, _ in found:
        yield co
    yield from _each_curve_codes(found, points)  # hashed one after the other, not joined first


def _interpolation_codes(found, points):
    """The interpolation codes (uint8) of the keys of curves, one after the other: where
    :func:`_keys_and_modes_of` ``found`` them, else read from their keyframe ``points``;
    joined in one call (a click's 96 curves: one slice assignment each cost 50 us)."""
    return np.concatenate(list(_each_curve_codes(found, points)) or [np.empty(0, _ENUM)])


def _each_curve_codes(found, points):
    """Each curve's interpolation codes (uint8), in order: where :func:`_keys_and_modes_of`
    ``found`` them, else read from its keyframe ``points``."""
    for (co, written), fcurve_points in zip(found, points):
        yield _key_enums(fcurve_points, "interpolation", len(co)) if written is None else written


def _keys_and_modes_of(fcurves, points):
    """:func:`_keys_and_modes` of each of ``fcurves`` (curves of one action, ``points`` their
    keyframe points): the remembered ones looked up with one call each, not three (a click
    digests 96 curves, read or written before)."""
    uid = _action_uid(fcurves)
    remembered = _remembered_of(uid)
    return [_still(remembered.get(pointer), len(fcurve_points)) or _keys_and_modes(fcurve, uid, fcurve_points)
            for fcurve, fcurve_points, pointer in zip(fcurves, points, map(_AS_POINTER, fcurves))]


def read_values(fcurve, frames):
    """Values of ``fcurve`` at integer ``frames`` as float64.

    Keys are read in bulk when every frame has a key (mocap: one key per frame) or when
    all keys are linear; otherwise the curve is evaluated frame by frame.
    """
    frames = np.asarray(frames)
    points = fcurve.keyframe_points
    count = len(points)
    if count and not len(fcurve.modifiers):
        co = _key_arrays(fcurve)
        key_frames = co[:, 0]
        first = int(np.searchsorted(key_frames, frames[0]))
        span = key_frames[first : first + len(frames)]
        if len(span) == len(frames) and np.array_equal(span, frames):
            return co[first : first + len(frames), 1].astype(np.float64)
        if np.all(np.diff(key_frames) > 0):
            where = np.clip(np.searchsorted(key_frames, frames), 0, count - 1)
            if np.all(key_frames[where] == frames):
                return co[where, 1].astype(np.float64)
            modes = _key_enums(points, "interpolation", count)
            if fcurve.extrapolation == "CONSTANT" and np.all(modes[:-1] == _INTERPOLATION["LINEAR"]):
                return np.interp(frames, key_frames, co[:, 1])
    evaluate = fcurve.evaluate
    return np.array([evaluate(float(frame)) for frame in frames], dtype=np.float64)


def read_curves(fcurves, frames):
    """Values (len(fcurves), F) of each of ``fcurves`` (curves of one action) at integer
    ``frames``, as :func:`read_values` gives them (see :func:`read_curve_rows`)."""
    return read_curve_rows(fcurves, frames)[0]


def read_curve_rows(fcurves, frames, rows=None):
    """Values (len(rows), F) of ``fcurves[rows]`` (curves of one action; by default all of
    them) at integer ``frames``, as :func:`read_values` gives them, and whether every one of
    ``fcurves`` (not only ``rows``) is a number on every frame. The curves keyed on exactly
    ``frames`` (mocap: one key per frame) are read into one buffer, checked as the float32
    keys Blender stores and only ``rows`` made float64: what costs a click on a short clip is
    the work per curve."""
    frames = np.asarray(frames)
    count = len(frames)
    pointers = list(map(_AS_POINTER, fcurves))
    sizes, modified, arrays = _curve_heads(fcurves, pointers)
    whole = np.flatnonzero((sizes == count) & ~modified)
    if len(whole) == len(fcurves) and len(whole):
        co = _read_rows(fcurves, pointers, arrays, count)
        # Compared as contiguous float32 (Blender's frames, |frame| < 2**20, are float32 numbers):
        # float32 against int64 in strided rows goes through numpy's casting buffers, 4x slower.
        if (co[..., 0].copy() == frames.astype(np.float32)).all():  # the usual clip: no fancy indices
            values = np.empty((len(fcurves) if rows is None else len(rows), count))
            values[:] = co[..., 1] if rows is None else co[rows, :, 1]
            return values, bool(np.isfinite(co[..., 1]).all())  # a float32 key is a number as a float64 one is
    values = _read_each(fcurves, pointers, arrays, whole, frames)
    return (values if rows is None else values[rows]), bool(np.isfinite(values).all())


def _curve_heads(fcurves, pointers):
    """The key count (n,) of each of ``fcurves`` (F-curve addresses ``pointers``), whether
    it has modifiers (n,) and the address of its key array (n,) uintp, or None where they
    are read through RNA (see :data:`_FCURVE_HEAD`)."""
    if fcurves:
        heads = _gather(np.array(pointers, dtype=np.uintp), 0, 1, 0, f"|V{_FCURVE_HEAD.itemsize}")
        heads = heads[:, 0].view(_FCURVE_HEAD)
        if _fcurve_layout or _heads_hold(fcurves[0], heads[0]):
            return heads["count"], heads["modifiers"] != 0, heads["bezt"]
    sizes = np.array([len(fcurve.keyframe_points) for fcurve in fcurves], dtype=int)
    return sizes, np.array([len(fcurve.modifiers) > 0 for fcurve in fcurves], dtype=bool), None


def _heads_hold(fcurve, head):
    """Whether ``head``, read of ``fcurve`` as :data:`_FCURVE_HEAD`, is what RNA says of it:
    its key count, its first key's address and whether it has modifiers (checked on the
    first curve with keys; until then RNA is asked)."""
    global _fcurve_layout
    if _fcurve_layout is None:
        points = fcurve.keyframe_points
        if not len(points):
            return False
        _fcurve_layout = bool(head["count"] == len(points) and head["bezt"] == points[0].as_pointer()
                              and (head["modifiers"] != 0) == (len(fcurve.modifiers) > 0))
    return _fcurve_layout


def _read_each(fcurves, pointers, arrays, whole, frames):
    """:func:`read_curve_rows`'s values of every curve (len(fcurves), F): the ``whole`` rows
    keyed on exactly ``frames`` read into one buffer, the others one by one."""
    count = len(frames)
    values = np.empty((len(fcurves), count))
    rest = np.ones(len(fcurves), dtype=bool)
    if len(whole):
        co = _read_rows([fcurves[row] for row in whole], [pointers[row] for row in whole],
                        None if arrays is None else arrays[whole], count)
        on_frames = (co[..., 0].copy() == frames.astype(np.float32)).all(axis=1)
        matched = whole[on_frames]
        values[matched] = co[on_frames, :, 1]
        rest[matched] = False
    for row in np.flatnonzero(rest):
        values[row] = read_values(fcurves[row], frames)
    return values


def _read_rows(fcurves, pointers, arrays, count):
    """The keys (len(fcurves), count, 2) float32 of ``fcurves`` (curves of one action, at
    ``pointers``, with key arrays at ``arrays`` or None: see :func:`_curve_heads`), each
    curve with ``count`` keys: copied where remembered, else read and remembered (read-only
    then)."""
    uid = _action_uid(fcurves)
    remembered = _remembered_of(uid)
    if remembered:
        known = [_still(remembered.get(pointer), count) for pointer in pointers]
        unread = [row for row, keys in enumerate(known) if keys is None]
    else:  # a job's first read has nothing to look up: every row is read
        unread = list(range(len(fcurves)))
    if not unread:
        read, codes = None, None
    elif arrays is not None and count >= 2 and _key_array_layout:  # (the layout checked on keys read before)
        read, codes = _key_rows(arrays[unread], count)
    else:
        read = np.empty((len(unread), count, 2), dtype=np.float32)
        codes = _read_points([fcurves[row].keyframe_points for row in unread], read)
    if len(unread) == len(fcurves):
        co = read
    else:
        co = np.empty((len(fcurves), count, 2), dtype=np.float32)
        for row, keys in enumerate(known):
            if keys is not None:
                co[row] = keys[0]
        if unread:
            co[unread] = read
    if _remembered is not None:
        co.flags.writeable = False  # its rows are shared by every later reader
        if unread:  # each read row and its codes, in one update of dict's own
            read.flags.writeable = False
            _remembered.setdefault(uid, {}).update(
                zip(map(pointers.__getitem__, unread), zip(read, repeat(None) if codes is None else codes)))
    return co
