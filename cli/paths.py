"""Where the command line may write, and how: never over an input, always atomically.

- :func:`refuse_writing_inputs`: an output or report that is an input (after ``..``,
  symlinks and hard links), or an output folder equal to or inside the input folder, is
  refused before any work. (An output folder inside the input folder would also be read
  as inputs on the next run.) So is one whose folder cannot be made, a file standing on
  its way.
- :func:`os_error_line`: a failure to read or write, told by the file and its cause.
- Every file is written through :func:`~..solvers.atomic_files.atomic_output` (under a
  temporary name beside its target, synced, renamed over it), which lives beside the BVH
  writer so that the numpy core's own writers are atomic too.
"""

import os
from pathlib import Path

from .errors import ClipError


def refuse_writing_inputs(source, output, report, inputs):
    """Raise :class:`ClipError` if ``output`` (a file, or a folder for a folder ``source``)
    or ``report`` would write over any of ``inputs``, or outside ``output`` through a symlink,
    or cannot be written where a file stands in place of one of its folders."""
    for path in (output, report):
        if path is not None:
            _refuse_files_as_folders(path)
    if source.is_dir():
        if _resolved(output) == _resolved(source) or _resolved(source) in _resolved(output).parents:
            raise ClipError(f"the output folder {output} is inside the input folder {source}: "
                            "choose a folder outside it (its files would be read as inputs)")
        if output.exists() and not output.is_dir():
            raise ClipError(f"the output {output} of a folder must be a folder")
        targets = [output / clip.relative_to(source) for clip in inputs]
        escaping = next((target for target in targets if leaves_folder(target, output)), None)
        if escaping is not None:
            raise ClipError(f"{escaping} would be written outside {output} through a symlinked folder: "
                            "remove the link")
    else:
        if output.is_dir():
            raise ClipError(f"the output {output} is a folder: give a file name")
        targets = [output]
    known = {_identity(clip): clip for clip in inputs if _identity(clip) is not None}
    known.update({_resolved(clip): clip for clip in inputs})
    for what, path in [*(("output", target) for target in targets), *([("report", report)] if report else [])]:
        clip = known.get(_identity(path)) or known.get(_resolved(path))
        if clip is not None:
            raise ClipError(f"the {what} {path} is the input {clip}: write it elsewhere (inputs are never written)")
    if report is not None and not source.is_dir() and same_file(report, output):
        raise ClipError(f"the report {report} is the output {output}: give them different names")


def _refuse_files_as_folders(path):
    """Raise :class:`ClipError` where the nearest of ``path``'s folders that exists is a file:
    the folders could not be made (Python would say "File exists", naming that file)."""
    existing = next((folder for folder in path.parents if folder.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ClipError(f"cannot write {path}: {existing} is a file, not a folder")


def os_error_line(error, source, target):
    """One line for ``error`` (an ``OSError``) met fixing ``source`` into ``target``: which of
    them could not be read or written and why ("cannot write out.bvh: Permission denied"),
    not Python's errno and quoted name."""
    if error.filename is None or not error.strerror:
        return str(error)
    path = Path(os.fsdecode(error.filename))
    if path == source:
        return f"cannot read {source}: {error.strerror}"
    if path == target or path.parent == target.parent or path in target.parents:  # a partial file beside it too
        return f"cannot write {target}: {error.strerror}"
    return f"{path}: {error.strerror}"


def _identity(path):
    """The file's device and inode (a hard link shares them), or None if it does not exist."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def same_file(path, other):
    """True if the two paths lead to the same file: the same name after ``..`` and
    symlinks, or the same file under another name (a hard link)."""
    return _resolved(path) == _resolved(other) or (_identity(path) is not None and _identity(path) == _identity(other))


def _resolved(path):
    return Path(os.path.realpath(path))


def leaves_folder(target, folder):
    """True if writing ``target`` would go outside ``folder`` through a symlinked subfolder."""
    return _resolved(folder) not in _resolved(target.parent).parents and _resolved(target.parent) != _resolved(folder)
