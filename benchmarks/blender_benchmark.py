"""End-to-end figures inside Blender (needs the ``bpy`` wheel): reading the action,
solving and writing keys, as one click of Remove Foot Sliding does."""

import tempfile
import time
from pathlib import Path

import numpy as np

CMU_TO_METRES = 0.056444


def sliding_copy(source, folder, root_scale, frames=None):
    """The clip with root motion scaled (and looped to ``frames``), as a BVH file."""
    from benchmark import clip_of_length

    from foot_lock.solvers import bvh

    parsed = bvh.read(source)
    skeleton, motion = bvh.to_motion(parsed)
    frames = frames or motion.frames
    looped = clip_of_length(skeleton, motion, frames, root_scale)
    parsed.tokens = np.zeros((frames, parsed.tokens.shape[1]), dtype=parsed.tokens.dtype)
    parsed.header = parsed.header.replace(f"Frames: {motion.frames}", f"Frames: {frames}")
    target = Path(folder) / f"{Path(source).stem}_{frames}.bvh"
    bvh.write(target, parsed, looped, 1.0, range(len(parsed.joints)))
    return target


def bake_seconds(bpy, path):
    import foot_lock

    bpy.ops.wm.read_factory_settings(use_empty=True)
    foot_lock.register()
    try:
        bpy.ops.import_anim.bvh(filepath=str(path), global_scale=CMU_TO_METRES, update_scene_fps=True,
                                update_scene_duration=True)
        obj = bpy.context.active_object
        start = time.perf_counter()  # the first click: contacts are detected and keyed too
        assert bpy.ops.foot_lock.remove_sliding() == {"FINISHED"}
        seconds = time.perf_counter() - start
        report = obj.foot_lock.report
        return seconds, report.frames, report.slide_before, report.slide_after
    finally:
        foot_lock.unregister()


def blender_figures(clips_dir):
    import bpy

    print(f"\nInside Blender {bpy.app.version_string}: Remove Foot Sliding end to end, root motion x1.25")
    print(f"{'clip':>22} {'frames':>7} {'seconds':>8} {'slide before':>13} {'after':>7}")
    with tempfile.TemporaryDirectory() as folder:
        for name, frames in (("cmu_131_01", 1000), ("cmu_01_01", None), ("cmu_01_01", 10000)):
            path = sliding_copy(Path(clips_dir) / f"{name}.bvh", folder, 1.25, frames)
            seconds, count, before, after = bake_seconds(bpy, path)
            print(f"{path.stem:>22} {count:>7} {seconds:>7.3f}s {before:>9.1f}cm/s {after:>7.2f}")
