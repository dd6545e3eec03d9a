"""``--resume``: a batch started again skips the files its last run already fixed.

A file is skipped only when its entry in the report says it was fixed, by this version
of Foot Lock, with the same per-file options (the settings flags and what to fix, exactly
as the workers get them), from an input whose SHA-256 is the one recorded (a .gltf's with
its buffers and images), into the same output, which still exists whole. Anything else is
fixed again: a failed or timed-out file, a changed input, other settings, a deleted
output. So every record carries the hash of its input and its options (:func:`stamp`).
"""

import hashlib
import json

from .errors import ClipError
from .gltf_files import input_files
from .report import FileRecord, foot_lock_version


def input_sha256(path):
    """The SHA-256 of a file, with a .gltf's buffers and images (a re-export can change them
    alone), or None when one cannot be read (its fix then says why)."""
    try:
        files = input_files(path)
        if len(files) == 1:
            with open(path, "rb") as file:
                return hashlib.file_digest(file, "sha256").hexdigest()
        digest = hashlib.sha256()
        for each in files:
            with open(each, "rb") as file:
                digest.update(hashlib.file_digest(file, "sha256").digest())
        return digest.hexdigest()
    except (OSError, ClipError):
        return None


def _output_whole(target):
    """Whether ``target`` is there, with the buffers and images a .gltf refers to."""
    try:
        return target.is_file() and all(path.is_file() for path in input_files(target))
    except (OSError, ClipError):
        return False


def stamped(source, options, fix):
    """The record of ``fix()`` (which fixes ``source`` with ``options``; None if it was
    stopped), stamped with what resume compares. The input is hashed before the fix, so
    the hash is of what it read."""
    digest = input_sha256(source)
    record = fix()
    return record if record is None else stamp(record, digest, options)


def stamp(record, digest, options):
    record.input_sha256, record.options = digest, list(options)
    return record


def already_fixed(report_path, pairs, options):
    """The previous records, by input, of the ``(source, target)`` pairs that need no new fix."""
    previous = previous_records(report_path)
    done = {}
    for source, target in pairs:
        old = previous.get(str(source))
        if old is not None and _still_valid(old, source, target, options):
            done[source] = old
    return done


def previous_records(report_path):
    """The records of the report a resumed run starts from, by input (none yet: empty)."""
    if not report_path.is_file():
        return {}
    try:
        document = json.loads(report_path.read_text(encoding="utf-8"))
        if document.get("foot_lock_version") != foot_lock_version():
            return {}  # another version may fix differently: redo everything
        return {entry["input"]: FileRecord(**entry) for entry in document["files"]}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ClipError(f"cannot resume from {report_path}: it is not a Foot Lock report ({error})") from error


def _still_valid(old, source, target, options):
    return (
        old.ok and old.output == str(target) and _output_whole(target)
        and old.options == list(options) and old.input_sha256 == input_sha256(source)
    )
