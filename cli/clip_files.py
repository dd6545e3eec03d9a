"""One file in, one file out: which path a format takes, and the record of what happened.

BVH to BVH goes through the numpy core (:mod:`.bvh_files`); every other pair through
Blender (:mod:`.blender_files`), which needs bpy: the wheel, or real Blender running this.
"""

import re
import time

from ..solvers.atomic_files import PARTIAL_PREFIX
from .bvh_files import fix_bvh
from .errors import ClipError
from .paths import os_error_line
from .report import FileRecord
from .settings_flags import bpy_available, solver_settings_of

FORMATS = (".bvh", ".blend", ".fbx", ".glb", ".gltf")  # in and out


def fix_file(source, target, args):
    """Fix one file; a failure the user can act on is recorded, not raised."""
    record = FileRecord(str(source), str(target))
    start = time.perf_counter()
    try:
        check_formats(source, target)
        target.parent.mkdir(parents=True, exist_ok=True)
        record.clips = _fix(source, target, args)
        record.ok = True
    except (ClipError, ValueError) as error:  # ValueError: the solvers' input errors
        record.error = one_line(str(error))
    except OSError as error:
        record.error = os_error_line(error, source, target)
    except Exception as error:  # a bug, or an importer's on a corrupt file: still one line, the rest go on
        record.error = f"unexpected error ({type(error).__name__}): {one_line(str(error))}"
    record.seconds = time.perf_counter() - start
    return record


def one_line(message):
    """A message on one line: the last line of a multi-line one (an operator's error ends
    with the Python exception that caused it), above the ``Location: <file>:<line>`` that
    Blender puts after an add-on operator's exception. A temporary output's name is given as
    the output's (see :func:`~..solvers.atomic_files.atomic_output`)."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    while len(lines) > 1 and lines[-1].startswith("Location:"):
        lines.pop()
    return _PARTIAL_NAME.sub("", lines[-1]) if lines else "no message"


_PARTIAL_NAME = re.compile(re.escape(PARTIAL_PREFIX) + "[0-9a-f]{32}-")


def check_formats(source, target):
    for path, verb in ((source, "read"), (target, "write")):
        if path.suffix.lower() not in FORMATS:
            folder = path is target and not path.suffix  # "-o fixed/" for one clip
            hint = " (the output of one clip is a file, not a folder)" if folder else ""
            raise ClipError(f"cannot {verb} {path.name}: use one of {', '.join(FORMATS)}{hint}")
    if target.suffix.lower() == ".bvh" and source.suffix.lower() != ".bvh":
        raise ClipError("a BVH is written only from a BVH, whose hierarchy it keeps: write .blend, .fbx or .glb")
    if not source.is_file():
        raise ClipError(f"{source} is not a file")
    if source.stat().st_size == 0:  # said before an importer reads it as some other broken kind of file
        raise ClipError("the file is empty (0 bytes)")


def _fix(source, target, args):
    if target.suffix.lower() == ".bvh":
        return fix_bvh(source, target, solver_settings_of(args), args.bvh_unit_scale)
    if not bpy_available():
        raise ClipError(f"writing {target.suffix} needs Blender: pip install bpy, or run through blender -b")
    from .blender_files import fix_in_blender

    return fix_in_blender(source, target, args)
