"""The ``root-motion`` command: make in-place clips travel (Root Motion from Feet).

BVH to BVH goes through the numpy core, rewriting only the translation joint's position
channels; the other formats through Blender, with the add-on's own job
(:func:`~..adapters.root_motion.root_motion_from_feet`, what the panel button does) on each
armature's current action, then saved like ``remove-sliding`` saves (in place for FBX and
glTF, a new ``<action>.rootmotion`` action in a ``.blend``).
"""

from pathlib import Path

from ..solvers import bvh, loops
from ..solvers.root_motion import plant_feet, travel_before_and_after, travel_rewritten, travel_summary
from .bvh_files import unit_scale
from .clip_files import FORMATS, check_formats
from .errors import ClipError
from .paths import os_error_line, refuse_writing_inputs
from .report import warning_notes

EXIT_FAILED = 1


def add_root_motion_command(commands):
    """The ``root-motion`` subcommand's parser, attached to ``commands`` (argparse subparsers)."""
    parser = commands.add_parser(
        "root-motion", help="make an in-place clip travel: root motion from its planted feet",
        description="Find the travel that keeps the planted feet of an in-place clip still and key it onto "
        f"the translation bone (or the object). Formats: {' '.join(FORMATS)}; a BVH is written from a BVH only. "
        "A looping clip gets a travel that repeats with offset.",
    )
    parser.add_argument("input", type=Path, help="a clip")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the clip with root motion")
    parser.add_argument("--armature", metavar="NAME", help="only this armature (default: every armature with an action)")
    parser.add_argument("--onto-object", action="store_true",
                        help="key the travel on the armature object instead of its translation bone (not for BVH)")
    # What the Blender path shares with remove-sliding: each armature's current action.
    parser.set_defaults(action=None, all_actions=False, bvh_unit_scale=None)


def root_motion(args):
    """Run the command; prints one line, returns the exit status."""
    try:
        check_formats(args.input, args.output)
        refuse_writing_inputs(args.input, args.output, None, [args.input])
        args.output.parent.mkdir(parents=True, exist_ok=True)
        if args.output.suffix.lower() == ".bvh":
            lines = [_bvh_root_motion(args.input, args.output, args.onto_object)]
        else:
            from .blender_files import root_motion_in_blender

            lines = root_motion_in_blender(args.input, args.output, args)
    except (ClipError, ValueError, OSError) as error:  # ValueError: the solvers' input errors
        message = os_error_line(error, args.input, args.output) if isinstance(error, OSError) else error
        print(f"FAILED {args.input}: {message}", flush=True)
        return EXIT_FAILED
    for line in lines:
        print(f"ok {args.input} -> {args.output}: {line}", flush=True)
    return 0


def _bvh_root_motion(source, target, onto_object):
    if onto_object:
        raise ClipError("a BVH file has no object: --onto-object needs .blend, .fbx or glTF")
    parsed = bvh.read(source)
    rig = bvh.detect_rig(parsed)
    scale, _ = unit_scale(parsed, rig)
    skeleton, motion = bvh.to_motion(parsed, scale)
    up, _ = bvh.standing_up(skeleton, motion, rig)
    looped = loops.is_closed_loop(skeleton, motion, rig, up)
    moved, travel, _ = plant_feet(skeleton, motion, rig, up, looped=looped)
    bvh.write(target, parsed, moved, scale, location_joints=[rig.pelvis])
    before, after = travel_before_and_after(skeleton, motion, rig.pelvis, travel, up)
    warnings = travel_rewritten(skeleton, motion, rig, before, after)  # the skeleton is in metres
    return (f"{travel_summary(before, after, motion.frames)}, keyed onto {skeleton.names[rig.pelvis]!r}"
            + warning_notes(warnings))
