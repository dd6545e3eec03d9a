"""The argument parser and the two commands: ``remove-sliding`` and ``demo``."""

import argparse
import os
import sys
from pathlib import Path

from .batch import fix_folder
from .clip_files import FORMATS, fix_file
from .demo import BUNDLED_CLIP, run_demo
from .errors import ClipError
from .report import file_line, summary_line, write_report
from .settings_flags import add_flags, panel_settings, resolve, settings_argv, settings_used

EXIT_FAILED = 1  # a clip failed (argparse exits with 2 on a bad command line)


def main(argv=None):
    """Run the command line; returns the exit status."""
    args = parse_args(argv)
    return args.run(args)


def run(argv=None):
    """Run the command line and end the process with its exit status."""
    status = main(argv)
    if _bpy_crashes_at_exit():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)  # skip the shutdown that would crash and turn the status into 139
    sys.exit(status)


def _bpy_crashes_at_exit():
    """True for the bpy 4.x wheel once its glTF exporter is loaded: at exit a space type
    then frees a Python class after Python has shut down (a segmentation fault; seen on
    4.2, not on 5.0)."""
    bpy = sys.modules.get("bpy")
    return (
        bpy is not None and not bpy.app.binary_path and bpy.app.version < (5, 0, 0)
        and any(name.startswith("io_scene_gltf2.blender.exp") for name in sys.modules)
    )


def parse_args(argv):
    settings = panel_settings()
    args = build_parser(settings).parse_args(argv)
    return resolve(args, settings) if args.command == "remove-sliding" else args


def build_parser(settings):
    parser = argparse.ArgumentParser(
        prog="python -m foot_lock", description="Remove foot sliding from character animation."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_remove_sliding(commands, settings)
    _add_demo(commands)
    return parser


def _add_remove_sliding(commands, settings):
    parser = commands.add_parser(
        "remove-sliding", help="fix a clip, or every clip in a folder",
        description="Fix a clip, or every clip in a folder (and its subfolders) with a pool of worker "
        f"processes. Formats: {' '.join(FORMATS)}; a BVH is written from a BVH only, keeping its "
        "hierarchy, channel layout, axes, units and frame rate.",
    )
    parser.add_argument("input", type=Path, help="a clip, or a folder of clips")
    parser.add_argument("-o", "--output", type=Path, required=True,
                        help="the fixed clip (its extension picks the format), or a folder for a folder")
    parser.add_argument("--report", type=Path, metavar="JSON",
                        help="write per clip the metrics before and after, contacts per leg, time and warnings")
    parser.add_argument("--jobs", type=_positive(int), default=os.cpu_count() or 1, metavar="N",
                        help="worker processes for a folder (default: the CPU count, %(default)s here)")
    scene = parser.add_argument_group("what to fix in .blend, .fbx and glTF files")
    scene.add_argument("--armature", metavar="NAME", help="only this armature (default: every armature with an action)")
    which = scene.add_mutually_exclusive_group()
    which.add_argument("--action", metavar="NAME", help="fix this action (default: each armature's current action)")
    which.add_argument("--all-actions", action="store_true", help="fix every action of each armature")
    parser.add_argument(
        "--bvh-unit-scale", type=_positive(float), metavar="METRES",
        help="metres per BVH unit, for the figures reported (default: guessed from the leg length, "
        "taking the common unit that makes the legs an adult's: m, cm, mm, inch or CMU's 0.056444 m)",
    )
    if settings:
        add_flags(parser, settings)
    else:
        parser.epilog = "The detection and solver settings flags need the bpy wheel (pip install bpy)."
    parser.set_defaults(run=remove_sliding)


def _add_demo(commands):
    parser = commands.add_parser(
        "demo", help="fix the bundled walk after making it slide",
        description="Scale the root motion of a walk by 1.25 (horizontally, about the first frame) so "
        "its feet slide, fix it to a BVH and to a .blend you can open, and print the figures.",
    )
    parser.add_argument("--clip", type=Path, default=BUNDLED_CLIP, help="a BVH walk (default: the bundled CMU walk)")
    parser.add_argument("--output-dir", type=Path, default=Path("foot_lock_demo"), metavar="DIR",
                        help="where the files go (default: %(default)s)")
    parser.add_argument("--root-scale", type=_positive(float), default=1.25, metavar="FACTOR",
                        help="root motion scale that makes the feet slide (default: %(default)s)")
    parser.set_defaults(run=run_demo)


def _positive(kind):
    def parse(text):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} is not positive")
        return value

    parse.__name__ = kind.__name__
    return parse


def remove_sliding(args):
    if args.input.is_dir():
        try:
            records = fix_folder(args.input, args.output, args.jobs, per_file_argv(args))
        except ClipError as error:
            print(f"Foot Lock: {error}")
            return EXIT_FAILED
        print(summary_line(records, args.report), flush=True)
    else:
        records = [fix_file(args.input, args.output, args)]
        print(file_line(records[0]), flush=True)
    if args.report:
        write_report(args.report, records, settings_used(args))
    return 0 if all(record.ok for record in records) else EXIT_FAILED


def per_file_argv(args):
    """The options of ``args`` that apply to each file, as a worker's command line."""
    argv = settings_argv(args, panel_settings())
    for flag, value in (("--armature", args.armature), ("--action", args.action),
                        ("--bvh-unit-scale", args.bvh_unit_scale)):
        if value is not None:
            argv += [flag, str(value)]
    return argv + (["--all-actions"] if args.all_actions else [])
