"""How much reading what the viewport shows costs, against Blender's own Bake Action
(needs the ``bpy`` wheel; figures for the notes, not a test):

    python benchmarks/viewport_benchmark.py [--clips DIR]

On one scene (a CMU walk whose armature object travels by keyed location, so the keys
alone do not say how it moves) it times, in this process:

- Blender's Bake Action (``bpy_extras.anim_utils.bake_action``, every bone, every frame);
- Foot Lock's evaluated read (step the scene, every bone's matrices in bulk) and the
  whole Remove Foot Sliding click on that path;
- the direct F-curve read and the whole click on the same walk without object motion.
"""

import argparse
import inspect
import sys
import time
from functools import partial
from pathlib import Path

from benchmark import CMU_TO_METRES, ROOT, import_foot_lock


def _scene(bpy, clip, travelling):
    bpy.ops.import_anim.bvh(filepath=str(clip), global_scale=CMU_TO_METRES, update_scene_fps=True,
                            update_scene_duration=True)
    obj = bpy.context.active_object
    start, end = (int(f) for f in obj.animation_data.action.frame_range)
    if travelling:
        for frame, x in ((start, 0.0), (end, 2.0)):
            obj.location.x = x
            obj.keyframe_insert("location", index=0, frame=frame)
    return obj, start, end


def _best_of(bpy, repeats, run):
    """Fastest of ``repeats`` runs of ``run()`` (which sets its scene up in a fresh file,
    the add-on registered, and returns a callable to time)."""
    foot_lock = import_foot_lock()
    best = float("inf")
    for _ in range(repeats):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        foot_lock.register()
        try:
            timed = run()
            started = time.perf_counter()
            timed()
            best = min(best, time.perf_counter() - started)
        finally:
            foot_lock.unregister()
    return best


def _bake_action(bpy, clip):
    from bpy_extras import anim_utils

    obj, start, end = _scene(bpy, clip, travelling=True)
    fields = inspect.signature(anim_utils.BakeOptions).parameters
    options = anim_utils.BakeOptions(**{
        name: name in {"do_pose", "do_visual_keying", "do_location", "do_rotation", "do_scale"}
        for name in fields
    })
    return lambda: anim_utils.bake_action(obj, action=None, frames=range(start, end + 1), bake_options=options)


def _evaluated_read(bpy, clip):
    from foot_lock.adapters import armature, evaluated

    obj, start, end = _scene(bpy, clip, travelling=True)
    scene = bpy.context.scene

    def read():
        sampled = evaluated.sample_pose(obj, scene, range(start, end + 1))
        armature.read_evaluated_motion(obj, sampled)
    return read


def _click(bpy, clip, travelling):
    _scene(bpy, clip, travelling)
    return lambda: bpy.ops.foot_lock.remove_sliding()


def _direct_read(bpy, clip):
    from foot_lock.adapters import armature

    obj, start, end = _scene(bpy, clip, travelling=False)
    action = obj.animation_data.action
    return lambda: armature.read_motion(obj, action, start, end)


def viewport_figures(clips_dir, clips=("cmu_07_01", "cmu_01_01"), repeats=3):
    import bpy

    import_foot_lock()
    print(f"\nInside Blender {bpy.app.version_string}: reading what the viewport shows (best of {repeats})")
    print(f"{'clip':>12} {'frames':>7} {'Bake Action':>12} {'eval read':>10} {'eval click':>11} "
          f"{'ratio':>6} {'keys read':>10} {'keys click':>11}")
    for name in clips:
        clip = Path(clips_dir) / f"{name}.bvh"
        baked = _best_of(bpy, repeats, partial(_bake_action, bpy, clip))
        read = _best_of(bpy, repeats, partial(_evaluated_read, bpy, clip))
        click = _best_of(bpy, repeats, partial(_click, bpy, clip, True))
        direct = _best_of(bpy, repeats, partial(_direct_read, bpy, clip))
        direct_click = _best_of(bpy, repeats, partial(_click, bpy, clip, False))
        frames = bpy.context.scene.frame_end - bpy.context.scene.frame_start + 1
        print(f"{name:>12} {frames:>7} {baked:>11.3f}s {read:>9.3f}s {click:>10.3f}s "
              f"{click / baked:>6.2f} {direct:>9.3f}s {direct_click:>10.3f}s")
    print("ratio: the whole click on the evaluated path over Bake Action alone (target <= 1.2)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=Path, default=ROOT.parent / "shared" / "clips")
    args = parser.parse_args(argv)
    viewport_figures(args.clips)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
