"""Where the command line may write, and how: never over an input, always atomically.

- :func:`refuse_writing_inputs`: an output or report that is an input (after ``..``,
  symlinks and hard links), or an output folder equal to or inside the input folder, is
  refused before any work. (An output folder inside the input folder would also be read
  as inputs on the next run.)
- :func:`atomic_output`: every file is written under a temporary name beside its target,
  synced to disk, then renamed over the target, so an interrupted or failed write (kill -9,
  a full disk, an exporter's error) leaves the previous file as it was. Renaming replaces
  a symlink at the target instead of writing through it.
"""

import glob
import os
import shutil
import uuid
from contextlib import contextmanager, suppress
from pathlib import Path

from .errors import ClipError

PARTIAL_PREFIX = ".foot_lock-partial-"  # files being written; never taken as inputs


def refuse_writing_inputs(source, output, report, inputs):
    """Raise :class:`ClipError` if ``output`` (a file, or a folder for a folder ``source``)
    or ``report`` would write over any of ``inputs``, or outside ``output`` through a symlink."""
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


@contextmanager
def atomic_output(target, companions=False):
    """Yield a temporary path to write ``target`` to; once the block ends, it is synced
    and renamed over ``target``. On any error the temporary file goes and ``target`` stays.

    ``companions``: the writer also puts files beside its output (a .gltf's .bin and
    textures), named after it: it then writes into a temporary folder beside the target,
    whose files are moved into place afterwards, the main file last.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Not created in advance: Blender would otherwise keep the empty file as a .blend1 backup.
    temp = target.parent / f"{PARTIAL_PREFIX}{uuid.uuid4().hex}-{target.name}"
    if companions:
        temp.mkdir()
        temp = temp / target.name
    try:
        yield temp
        if not temp.is_file():
            raise ClipError(f"nothing was written to {target}")
        _move_into_place(temp, target, companions)
    finally:
        _remove(temp.parent if companions else temp)


def _move_into_place(temp, target, companions):
    written = sorted(path for path in temp.parent.rglob("*") if path.is_file()) if companions else [temp]
    written.sort(key=lambda path: path == temp)  # the main file last: it names the others
    for path in written:
        final = target.parent / path.relative_to(temp.parent) if companions else target
        final.parent.mkdir(parents=True, exist_ok=True)
        _sync(path)
        os.chmod(path, _mode_for(final))
        os.replace(path, final)
    _sync_folder(target.parent)


def _mode_for(final):
    """The permissions the file would get if written in place: the old file's, else the umask's."""
    try:
        return os.stat(final).st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _sync(path):
    with open(path, "rb+") as handle:
        os.fsync(handle.fileno())


def _sync_folder(folder):
    with suppress(OSError):  # not every file system can sync a folder
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _remove(path):
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with suppress(FileNotFoundError):
            path.unlink()


def remove_partial_outputs(target):
    """The temporary files a killed writer of ``target`` left beside it."""
    for partial in Path(target).parent.glob(f"{PARTIAL_PREFIX}*-{glob.escape(Path(target).name)}"):
        _remove(partial)
