"""Files written atomically: under a temporary name beside the target, synced to disk,
then renamed over it, so an interrupted or failed write (kill -9, a full disk, an
exporter's error) leaves the previous file as it was. Renaming replaces a symlink at the
target instead of writing through it.

Standard library only: the BVH writer here and the command line (:mod:`..cli`) share it.
"""

import glob
import os
import shutil
import uuid
from contextlib import contextmanager, suppress
from pathlib import Path

PARTIAL_PREFIX = ".foot_lock-partial-"  # files being written; never taken as inputs


class ProtectedFileError(FileExistsError):
    """An output (or a file written beside it) would replace a file it must not."""


@contextmanager
def atomic_output(target, companions=False, protected=()):
    """Yield a temporary path to write ``target`` to; once the block ends, it is synced
    and renamed over ``target``. On any error the temporary file goes and ``target`` stays.

    ``companions``: the writer also puts files beside its output (a .gltf's .bin and
    textures), named after it: it then writes into a temporary folder beside the target,
    whose files are moved into place afterwards, the main file last. None is moved if one
    would replace any of the ``protected`` files (an input and the files it refers to):
    :class:`ProtectedFileError`.
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
            raise FileNotFoundError(f"nothing was written to {target}")  # an exporter that wrote nothing
        _move_into_place(temp, target, companions, protected)
    finally:
        _remove(temp.parent if companions else temp)


def _move_into_place(temp, target, companions, protected):
    written = sorted(path for path in temp.parent.rglob("*") if path.is_file()) if companions else [temp]
    written.sort(key=lambda path: path == temp)  # the main file last: it names the others
    finals = [target.parent / path.relative_to(temp.parent) if companions else target for path in written]
    kept = [Path(path) for path in protected if Path(path).exists()]
    # The same file by device and inode: a hard link, or another case of the name on a
    # file system that ignores case, is it too.
    clash = next((final for final in finals if final.exists() and any(os.path.samefile(final, path) for path in kept)),
                 None)
    if clash is not None:
        raise ProtectedFileError(f"writing {target.name} would replace {clash}, a file of the input: "
                                 "write the output elsewhere or under another name (inputs are never written)")
    for path, final in zip(written, finals):
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
