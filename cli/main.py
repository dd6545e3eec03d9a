"""The commands ``remove-sliding``, ``root-motion`` and ``demo`` (their arguments: :mod:`.arguments`).

``remove-sliding`` on one file fixes a BVH going to a BVH in this process (numpy only)
and every file that goes through Blender in a worker process (:mod:`.batch`), so that a
hung or crashing file is bounded by ``--timeout`` like a file of a folder is. Whatever
goes wrong is one line naming the file; Ctrl-C and SIGTERM stop with 130 and 143.
"""

import os
import shutil
import sys
import traceback
from contextlib import contextmanager
from functools import partial

from .arguments import parse_args
from .batch import clips_in, fix_folder, run_worker
from .clip_files import fix_file
from .demo import run_demo
from .errors import ClipError
from .farm import farm_misuse
from .merge_reports import merge_reports
from .paths import refuse_writing_inputs
from .report import file_line, summary_line, write_report
from .resume import journal_path, stamped
from .root_motion_files import root_motion
from .settings_flags import panel_settings, settings_argv, settings_used
from .stops import Stopped, stop_on_signals

EXIT_FAILED = 1  # a clip failed
EXIT_USAGE = 2  # a bad command line (as argparse exits)


def main(argv=None):
    """Run the command line; returns the exit status."""
    with stop_on_signals(), _reader_may_leave():
        try:
            args = parse_args(argv)  # starts Blender (see .stops): a stop meanwhile is a stop too
            return COMMANDS[args.command](args)
        except Stopped as stop:
            print(f"Foot Lock: {stop}", flush=True)
            return stop.exit_status


class _StdoutWithoutReader:
    """``sys.stdout`` that lets the job go on when its reader leaves (``... | head -1``): what
    is printed after that is dropped; the outputs and the report are still written."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._drop()
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._drop()

    def _drop(self):
        # Later writes, and the interpreter's own flush at exit, go to /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextmanager
def _reader_may_leave():
    stdout = sys.stdout
    sys.stdout = _StdoutWithoutReader(stdout)
    try:
        yield
    finally:
        sys.stdout = stdout


def run(argv=None):
    """Run the command line and end the process with its exit status.

    With Blender loaded the process ends at once, skipping the interpreter's shutdown:
    the files are written and synced by then, and Blender's own exit can still crash
    (Blender 4.2 frees Python classes and drivers after Python has shut down, which
    turns a success into a segmentation fault, status 139). So does every other way out
    of :func:`main` once it has loaded Blender: argparse's ``--help`` and usage errors
    (status 0 and 2), a bug (its traceback, status 1).
    """
    status = _exit_status(argv)
    bpy = sys.modules.get("bpy")
    if bpy is not None:
        shutil.rmtree(bpy.app.tempdir, ignore_errors=True)  # what Blender's exit would have removed
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)


def _exit_status(argv):
    """The status :func:`main` returns, or the one Python would exit with where it raises."""
    try:
        return main(argv)
    except SystemExit as exit_request:  # argparse's own exits
        code = exit_request.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except Exception:
        traceback.print_exc()
        return 1


def remove_sliding(args):
    misuse = farm_misuse(args)
    if misuse:
        print(f"Foot Lock: {misuse}", flush=True)
        return EXIT_USAGE
    try:
        inputs = clips_in(args.input, args.output) if args.input.is_dir() else [args.input]
        refuse_writing_inputs(args.input, args.output, args.report, inputs)
    except ClipError as error:
        print(f"Foot Lock: {error}", flush=True)
        return EXIT_FAILED
    try:
        records = fix_one_or_all(args)
    except Stopped as stop:
        if args.report and stop.records is not None:
            _write_report(args, stop.records, stopped=str(stop), unfinished=stop.unfinished)
        raise
    except ClipError as error:
        print(f"Foot Lock: {error}", flush=True)
        return EXIT_FAILED
    if args.report and not _write_report(args, records):
        return EXIT_FAILED
    return 0 if all(record.ok for record in records) else EXIT_FAILED


def fix_one_or_all(args):
    """The records of the files fixed, with a line printed per file (and a summary for a folder)."""
    if args.input.is_dir():
        records = fix_folder(args.input, args.output, args.jobs, per_file_argv(args), args.timeout, args)
        print(summary_line(records, args.report), flush=True)
        return records
    if args.in_this_process or _numpy_only(args):
        record = stamped(args.input, per_file_argv(args), partial(fix_file, args.input, args.output, args))
    else:
        record = stamped(args.input, per_file_argv(args), partial(
            run_worker, args.input, args.output, per_file_argv(args), args.timeout))
    print(file_line(record), flush=True)
    return [record]


def _numpy_only(args):
    return args.input.suffix.lower() == args.output.suffix.lower() == ".bvh"


def _write_report(args, records, **stop):
    """Write the report; its journal (a folder's, see :mod:`.resume`) goes once it is written."""
    try:
        write_report(args.report, records, settings_used(args), shard=args.shard, **stop)
    except OSError as error:
        print(f"Foot Lock: cannot write the report {args.report}: {error.strerror or error}", flush=True)
        return False
    journal_path(args.report).unlink(missing_ok=True)
    return True


def per_file_argv(args):
    """The options of ``args`` that apply to each file, as a worker's command line."""
    argv = settings_argv(args, panel_settings())
    for flag, value in (("--armature", args.armature), ("--action", args.action),
                        ("--bvh-unit-scale", args.bvh_unit_scale)):
        if value is not None:
            argv += [flag, str(value)]
    return argv + (["--all-actions"] if args.all_actions else [])


COMMANDS = {"remove-sliding": remove_sliding, "root-motion": root_motion, "demo": run_demo,
            "merge-reports": merge_reports}
