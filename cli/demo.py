"""``python -m foot_lock demo``: the bundled CMU walk, made to slide, then fixed.

Scaling the root's horizontal motion (here by 1.25 about the first frame) is the usual
cause of sliding: the body travels further than the steps. The sliding copy is then fixed
exactly as ``remove-sliding`` would fix it, twice: to a BVH through the numpy core, and to
a .blend through Blender and the add-on, which keeps the sliding action beside the fixed
one for comparison.
"""

from pathlib import Path

from ..solvers import bvh
from .arguments import parse_args
from .clip_files import fix_file
from .paths import os_error_line
from .report import clip_name, metrics_table

DATA = Path(__file__).resolve().with_name("data")
BUNDLED_CLIP = DATA / "cmu_07_01.bvh"
ATTRIBUTION = DATA / "ATTRIBUTION.txt"


def run_demo(args):
    args.clip = args.clip or BUNDLED_CLIP
    sliding = args.output_dir / f"{args.clip.stem}_sliding.bvh"
    try:
        if args.clip.suffix.lower() != ".bvh":
            raise ValueError("the demo makes a BVH walk slide: give it a .bvh file")
        args.output_dir.mkdir(parents=True, exist_ok=True)
        bvh.write_sliding_copy(args.clip, sliding, args.root_scale)
    except (ValueError, OSError) as error:  # ValueError: not a BVH the solvers can read
        message = os_error_line(error, args.clip, sliding) if isinstance(error, OSError) else error
        print(f"Foot Lock demo: FAILED {args.clip}: {message}", flush=True)
        return 1
    print(f"Foot Lock demo: {args.clip.name} with its root motion scaled x{args.root_scale:g} -> {sliding}")
    records = []
    for suffix in (".bvh", ".blend"):
        fixed = args.output_dir / f"{args.clip.stem}_fixed{suffix}"
        argv = ["remove-sliding", str(sliding), "-o", str(fixed)]
        print(f"\n$ python -m foot_lock {' '.join(argv)}")
        records.append(fix_file(sliding, fixed, parse_args(argv)))
        print_record(records[-1])
    if records[-1].ok and "kept" not in records[-1].clips[0]:
        clip = records[-1].clips[0]
        print(f"\nOpen {records[-1].output} in Blender and play: armature {clip['armature']!r} plays the fixed "
              f"action {clip['output_action']!r}; the sliding one, {clip['action']!r}, is kept to compare.")
    if args.clip == BUNDLED_CLIP:
        print("\n" + ATTRIBUTION.read_text(encoding="utf-8").strip())
    return 0 if all(record.ok for record in records) else 1


def print_record(record):
    if not record.ok:
        print(f"  FAILED: {record.error}")
        return
    for clip in record.clips:
        if "kept" in clip:  # a pose, not a motion
            print(f"  {clip_name(clip)}{clip['kept']}")
            continue
        contacts = ", ".join(f"{leg} {info['frames']}" for leg, info in clip["contacts"].items())
        print(f"  {clip['frames']} frames at {clip['fps']:g} fps; contact frames per leg: {contacts}; "
              f"{clip['seconds']:.2f} s")
        print(metrics_table(clip))
    print(f"  -> {record.output}")
