"""End-to-end figures inside Blender (needs the ``bpy`` wheel): reading the action,
solving and writing keys, as one click of Remove Foot Sliding does; and what Preview adds
to every frame (it poses the legs from its simulation before Blender evaluates the frame)
and what switching it on costs (the simulation of the whole clip)."""

import tempfile
import time
from pathlib import Path

import numpy as np
from benchmark import CMU_TO_METRES


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
    bvh.write(target, parsed, looped, 1.0, range(len(parsed.joints)), np.flatnonzero(skeleton.parents < 0))
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
        read_write_figures(bpy, sliding_copy(Path(clips_dir) / "cmu_01_01.bvh", folder, 1.0, 10000))
    preview_figures(bpy, clips_dir)
    control_rig_figures(bpy, clips_dir)


def read_write_figures(bpy, path):
    """The adapter alone: every bone of a 10,000-frame action read into arrays, then
    written back in bulk into a copy (what the tests check for correctness)."""
    from foot_lock.adapters import armature

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_anim.bvh(filepath=str(path), global_scale=CMU_TO_METRES, update_scene_fps=True,
                            update_scene_duration=True)
    obj = bpy.context.active_object
    action = obj.animation_data.action
    start, end = (round(value) for value in action.frame_range)
    bones = [bone.name for bone in obj.pose.bones]
    begin = time.perf_counter()
    _, motion, joint_map = armature.read_motion(obj, action, start, end)
    read = time.perf_counter() - begin
    begin = time.perf_counter()
    armature.write_motion(obj, action, joint_map, motion, start, bones, [bones[0]], "copy")
    write = time.perf_counter() - begin
    print(f"\nAdapter, {motion.frames} frames x {len(bones)} bones: read {1e3 * read:.0f} ms, "
          f"write every bone into a copy {1e3 * write:.0f} ms")


def terrain_mesh(bpy, kind):
    """Stairs (12 cm rise, 50 cm run) or a 5 degree ramp across the walk of cmu_07_01,
    which goes along -Y from y = 1.8; flat before y = 1."""
    rows = [(3.0, 0.0), (1.0, 0.0)]
    if kind == "stairs":
        for step in range(10):
            rows += [(1.0 - 0.5 * step, 0.12 * (step + 1)), (0.5 - 0.5 * step, 0.12 * (step + 1))]
    else:
        rows.append((-4.0, 5.0 * np.tan(np.radians(5.0))))
    vertices = [(x, y, z) for y, z in rows for x in (-1.0, 2.0)]
    faces = [(2 * i, 2 * i + 1, 2 * i + 3, 2 * i + 2) for i in range(len(rows) - 1)]
    mesh = bpy.data.meshes.new(kind)
    mesh.from_pydata(vertices, [], faces)
    bpy.context.scene.collection.objects.link(bpy.data.objects.new(kind, mesh))


def preview_frame_ms(bpy, clips_dir, kind, characters=1, root_scale=1.0, repeats=5):
    """Milliseconds per ``scene.frame_set`` over the whole clip on the terrain, without and
    with Preview on ``characters`` copies of the walk side by side (best of ``repeats``
    passes: the least disturbed by the rest of the machine), and the seconds Preview took
    to start (simulating every character's whole clip)."""
    import foot_lock

    bpy.ops.wm.read_factory_settings(use_empty=True)
    foot_lock.register()
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(clips_dir) / "cmu_07_01.bvh"
            if root_scale != 1.0:
                path = sliding_copy(path, folder, root_scale)
            walkers = []
            for index in range(characters):
                bpy.ops.import_anim.bvh(filepath=str(path), global_scale=CMU_TO_METRES, update_scene_fps=True,
                                        update_scene_duration=True)
                walkers.append(bpy.context.active_object)
                walkers[-1].location.x = 0.25 * index  # side by side, all on the terrain
        terrain_mesh(bpy, kind)
        scene = bpy.context.scene
        frames = range(scene.frame_start, scene.frame_end + 1)

        def per_frame():
            best = np.inf
            for _ in range(repeats):
                start = time.perf_counter()
                for frame in frames:
                    scene.frame_set(frame)
                best = min(best, (time.perf_counter() - start) / len(frames))
            return 1e3 * best

        without = per_frame()
        start = time.perf_counter()
        for obj in walkers:
            bpy.context.view_layer.objects.active = obj
            obj.foot_lock.preview = True
        starting = time.perf_counter() - start
        with_preview = per_frame()
        for obj in walkers:
            assert obj.foot_lock.preview, obj.foot_lock.preview_error
        return without, with_preview, starting
    finally:
        foot_lock.unregister()


def preview_figures(bpy, clips_dir, repeats=5):
    print("\nPreview: scene.frame_set per frame over cmu_07_01 (317 frames, 120 fps), without and with Preview;")
    print("added = with - without, measured in the same run; start = simulating the whole clip when Preview is")
    print("switched on (again after an edit of what it depends on)")
    print(f"{'terrain':>8} {'root':>5} {'walkers':>8} {'without':>9} {'with':>9} {'added':>9} {'ratio':>6} "
          f"{'start':>7}")
    added_one = {}
    for kind in ("stairs", "ramp"):
        for root_scale, characters in ((1.0, 1), (1.25, 1), (1.0, 10)):
            without, with_preview, starting = preview_frame_ms(bpy, clips_dir, kind, characters, root_scale, repeats)
            added = with_preview - without
            added_one.setdefault(kind, added)
            print(f"{kind:>8} {root_scale:>5.2f} {characters:>8} {without:>7.3f}ms {with_preview:>7.3f}ms "
                  f"{added:>7.3f}ms {with_preview / without:>6.2f} {starting:>6.2f}s")
        print(f"{'':>8} ten walkers add {added / max(added_one[kind], 1e-9):.1f}x what one adds")


def control_rig_figures(bpy, clips_dir, clip="cmu_07_01.bvh"):
    """Remove Foot Sliding on Rigify's Human rig walking on its controls (the test scene of
    ``tests/control_rig_scenes.py``) against Blender's own Bake Action (visual keying, every
    pose bone) of the same rig and range, in the same process. Target: at most 2x."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import foot_lock
    from control_rig_scenes import RIGIFY_WALK, key_walk, open_rigify_rig, save_rigify_rig

    with tempfile.TemporaryDirectory() as folder:
        path = save_rigify_rig(Path(folder) / "rigify_human.blend")
        bpy.ops.wm.read_factory_settings(use_empty=True)
        foot_lock.register()
        try:
            rig = open_rigify_rig(bpy, path)
            action = key_walk(bpy, rig, RIGIFY_WALK, Path(clips_dir) / clip, 1.12)
            start, end = (round(value) for value in action.frame_range)
            begin = time.perf_counter()
            assert bpy.ops.foot_lock.remove_sliding() == {"FINISHED"}
            ours = time.perf_counter() - begin
            report = rig.foot_lock.report
            figures = (report.slide_before, report.slide_after, report.control_residual, len(rig.pose.bones))
            rig.animation_data.action = action
            begin = time.perf_counter()
            bpy.ops.nla.bake(frame_start=start, frame_end=end, only_selected=False, visual_keying=True,
                             bake_types={"POSE"})
            bake = time.perf_counter() - begin
        finally:
            foot_lock.unregister()
    before, after, residual, bones = figures
    print(f"\nControl rig (Rigify Human, {bones} bones, {end - start + 1} frames, keyed on foot_ik/torso): "
          f"Remove Foot Sliding {ours:.2f} s, Bake Action {bake:.2f} s, ratio {ours / bake:.2f} (target <= 2); "
          f"DEF toe slide {before:.1f} -> {after:.2f} cm/s, residual {residual:.3f} mm")
