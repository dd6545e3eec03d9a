"""The command line's argument parser, shared by :mod:`.main` and :mod:`.demo`.

It only describes the commands; :mod:`.main` runs them. No module of the command line
imports :mod:`.main` back, so the demo builds its ``remove-sliding`` arguments here.
"""

import argparse
import os
from pathlib import Path

from .clip_files import FORMATS
from .farm import add_farm_flags
from .merge_reports import add_merge_reports
from .root_motion_files import add_root_motion_command
from .settings_flags import add_flags, panel_settings, resolve

DEFAULT_TIMEOUT = 3600.0  # seconds per file: generous, a long clip takes a minute or two
WORKER_ONLY = "--in-this-process"  # a worker's own flag: fix the file here, not in a worker


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
    add_root_motion_command(commands)
    _add_demo(commands)
    add_merge_reports(commands)
    return parser


def _add_remove_sliding(commands, settings):
    parser = commands.add_parser(
        "remove-sliding", help="fix a clip, or every clip in a folder",
        description="Fix a clip, or every clip in a folder (and its subfolders) with a pool of worker "
        f"processes. Formats: {' '.join(FORMATS)}; a BVH is written from a BVH only, keeping its "
        "hierarchy, channel layout, axes, units and frame rate. Inputs are never written: an output "
        "or report that is an input, or an output folder inside the input folder, is refused.",
    )
    parser.add_argument("input", type=Path, help="a clip, or a folder of clips")
    parser.add_argument("-o", "--output", type=Path, required=True,
                        help="the fixed clip (its extension picks the format), or a folder for a folder")
    parser.add_argument("--report", type=Path, metavar="JSON",
                        help="write per clip the metrics before and after, contacts per leg, time and warnings")
    parser.add_argument("--jobs", type=_positive(int), default=os.cpu_count() or 1, metavar="N",
                        help="worker processes for a folder (default: the CPU count, %(default)s here; "
                        "fewer when free memory would not hold them)")
    parser.add_argument("--timeout", type=_positive(float), default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help="stop a file that takes longer than this and report it as timed out "
                        "(default: %(default)g)")
    parser.add_argument(WORKER_ONLY, dest="in_this_process", action="store_true", help=argparse.SUPPRESS)
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
    add_farm_flags(parser)
    if settings:
        add_flags(parser, settings)
    else:
        parser.epilog = "The detection and solver settings flags need the bpy wheel (pip install bpy)."


def _add_demo(commands):
    parser = commands.add_parser(
        "demo", help="fix the bundled walk after making it slide",
        description="Scale the root motion of a walk by 1.25 (horizontally, about the first frame) so "
        "its feet slide, fix it to a BVH and to a .blend you can open, and print the figures.",
    )
    parser.add_argument("--clip", type=Path, help="a BVH walk (default: the bundled CMU walk)")
    parser.add_argument("--output-dir", type=Path, default=Path("foot_lock_demo"), metavar="DIR",
                        help="where the files go (default: %(default)s)")
    parser.add_argument("--root-scale", type=_positive(float), default=1.25, metavar="FACTOR",
                        help="root motion scale that makes the feet slide (default: %(default)s)")


def _positive(kind):
    def parse(text):
        value = kind(text)
        if not value > 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{text} is not a positive number")
        return value

    parse.__name__ = kind.__name__
    return parse
