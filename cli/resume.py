"""``--resume``: a batch started again skips the files its last run already fixed.

A file is skipped only when its entry in the report (or in its journal) says it was fixed, by this version
of Foot Lock, with the same per-file options (the settings flags and what to fix, exactly
as the workers get them), from an input whose SHA-256 is the one recorded (a .gltf's with
its buffers and images), into the same output, which still exists whole. Anything else is
fixed again: a failed or timed-out file, a changed input, other settings, a deleted
output. So every record carries the hash of its input and its options (:func:`stamp`).

A folder run with a report also appends each file's record to the report's journal as the
file finishes, and removes the journal once the report is written: a run killed before
that (SIGKILL: an out-of-memory kill, a reclaimed spot node, a scheduler's grace period
over) leaves the journal, and ``--resume`` reads it as the report it never wrote.
"""

import hashlib
import json
from contextlib import contextmanager
from dataclasses import asdict

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


def journal_path(report_path):
    return report_path.with_name(report_path.name + ".journal")


@contextmanager
def journaling(report_path, resumed):
    """A function that appends a record to the journal of ``report_path`` (one JSON line each,
    flushed: a killed run loses none that finished), or does nothing without a report. A run
    that is not ``resumed`` starts its journal afresh: it fixes every file again."""
    if report_path is None:
        yield lambda record: None
        return
    path = journal_path(report_path)
    try:  # opened before the first file: a report that cannot be written is told before the work
        report_path.parent.mkdir(parents=True, exist_ok=True)
        journal = open(path, "a" if resumed else "w", encoding="utf-8")  # noqa: SIM115 (closed below)
    except OSError as error:
        raise ClipError(f"cannot write the report {report_path} (its journal {path.name}: "
                        f"{error.strerror or error})") from error
    version = foot_lock_version()  # read from the manifest once, not per file
    with journal:
        def append(record):
            journal.write(json.dumps({"foot_lock_version": version, **asdict(record)}) + "\n")
            journal.flush()
        yield append


def previous_records(report_path):
    """The records of the report a resumed run starts from, by input (none yet: empty), and
    those of its journal, which finished after the report was last written."""
    return {**_report_records(report_path), **_journal_records(journal_path(report_path))}


def _journal_records(path):
    """The records of a journal, by input: this version's, the last of each input; a line cut
    off by the kill is left out."""
    if not path.is_file():
        return {}
    records, version = {}, foot_lock_version()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
            if entry.pop("foot_lock_version") == version:
                records[entry["input"]] = FileRecord(**entry)
        except (ValueError, KeyError, TypeError):
            continue
    return records


def _report_records(report_path):
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
