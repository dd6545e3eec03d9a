"""End-to-end figures inside Blender (needs the ``bpy`` wheel): reading the action,
solving and writing keys, as one click of Remove Foot Sliding does; and what Preview adds
to every frame (it poses the legs from its simulation before Blender evaluates the frame),
for one walker and for ten in one scene, and what switching it on costs (the simulation
of the whole clip)."""

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


def walk_scene(bpy, path, kind, characters):
    """A fresh scene: ``characters`` copies of the walk at ``path`` side by side, all on the terrain."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    walkers = []
    for index in range(characters):
        bpy.ops.import_anim.bvh(filepath=str(path), global_scale=CMU_TO_METRES, update_scene_fps=True,
                                update_scene_duration=True)
        walkers.append(bpy.context.active_object)
        walkers[-1].location.x = 0.25 * index
    terrain_mesh(bpy, kind)
    return walkers


def show_previews(bpy, walkers, count):
    """Preview on for the first ``count`` walkers and off for the others, the scene shown at
    its first frame: CPU seconds it took (Preview simulates each armature it starts on)."""
    start = time.process_time()
    for index, obj in enumerate(walkers):
        if obj.foot_lock.preview != (index < count):
            obj.foot_lock.preview = index < count
    scene = bpy.context.scene
    scene.frame_set(scene.frame_start)  # what the switches left to evaluate, outside the timed frames
    seconds = time.process_time() - start
    for obj in walkers[:count]:
        assert obj.foot_lock.preview, obj.foot_lock.preview_error
    return seconds


class HandlerClock:
    """CPU time spent inside Preview's frame handlers: probes registered just before and
    just after each of them (Blender runs a handler list in order)."""

    def __init__(self, bpy):
        from foot_lock.adapters import preview

        handlers = bpy.app.handlers
        self.lists = ((handlers.frame_change_pre, preview._on_frame_change_pre),
                      (handlers.frame_change_post, preview._on_frame_change))
        self.spent = 0.0
        self.started = 0.0

    def _start(self, *_args):
        self.started = time.process_time()

    def _stop(self, *_args):
        self.spent += time.process_time() - self.started

    def __enter__(self):
        for handlers, function in self.lists:
            if function in handlers:
                handlers.insert(list(handlers).index(function), self._start)
                handlers.insert(list(handlers).index(function) + 1, self._stop)
        return self

    def __exit__(self, *_exc):
        for handlers, _ in self.lists:
            for probe in (self._start, self._stop):
                while probe in handlers:
                    handlers.remove(probe)


def playback_ms(bpy):
    """CPU milliseconds of this process for each ``scene.frame_set`` over the scene's frame
    range, and of them inside Preview's handlers (2, F). CPU time, not wall time: on a shared
    machine it counts this process' work only."""
    scene, clock, out = bpy.context.scene, time.process_time, []
    with HandlerClock(bpy) as handlers:
        for frame in range(scene.frame_start, scene.frame_end + 1):
            start, inside = clock(), handlers.spent
            scene.frame_set(frame)
            out.append((clock() - start, handlers.spent - inside))
    return 1e3 * np.array(out).T


def preview_costs(bpy, walkers, counts, repeats):
    """Per count of previewing walkers (0: plain playback): the median ms per frame, the
    median of what Preview adds to the same frame of the same round's plain playback, and the
    median ms per frame inside Preview's handlers. Each round plays the scene once per count,
    in turn (one round forward, the next backward), so what the rest of the machine does
    falls on all counts alike; a frame disturbed by it is one sample among repeats x frames."""
    counts = (0, *counts)
    rounds = {count: [] for count in counts}
    for repeat in range(repeats):
        for count in counts if repeat % 2 == 0 else counts[::-1]:
            show_previews(bpy, walkers, count)
            rounds[count].append(playback_ms(bpy))
    show_previews(bpy, walkers, 0)
    times = {count: np.array(passes) for count, passes in rounds.items()}  # (repeats, 2, F)
    plain = times[0][:, 0]
    return {count: (float(np.median(t[:, 0])), float(np.median(t[:, 0] - plain)), float(np.median(t[:, 1])))
            for count, t in times.items()}


def start_seconds(bpy, walkers, ground):
    """CPU seconds per walker that Preview takes to start on all ``walkers``, and to simulate
    them again after ``ground`` was moved (the next frame does it)."""
    starting = show_previews(bpy, walkers, len(walkers))
    ground.location.z += 0.001
    bpy.context.view_layer.update()  # the edit is seen: the previews are stale
    scene = bpy.context.scene
    start = time.process_time()
    scene.frame_set(scene.frame_start + 1)
    again = time.process_time() - start
    show_previews(bpy, walkers, 0)
    return starting / len(walkers), again / len(walkers)


def preview_figures(bpy, clips_dir, repeats=7, crowd=10, kinds=("stairs", "ramp")):
    """What Preview adds to playback, for one walker alone and for one and ``crowd`` walkers
    in a scene of ``crowd``."""
    import foot_lock

    print(f"\nPreview over cmu_07_01 (317 frames, 120 fps): CPU ms per scene.frame_set, medians over {repeats} "
          "rounds x 317 frames,\neach round playing the scene once per case in turn; added = with Preview - the "
          "same frame of the same round's plain\nplayback; handlers = of that, inside Preview's frame handlers; "
          "start = CPU s per walker to switch Preview on;\nedit = to simulate again after a ground edit")
    print(f"{'terrain':>8} {'root':>5} {'walkers':>8} {'previewing':>11} {'plain':>8} {'with':>8} "
          f"{'added':>8} {'handlers':>9} {'ratio':>6} {'start':>7} {'edit':>7}")
    foot_lock.register()
    try:
        with tempfile.TemporaryDirectory() as folder:
            for kind in kinds:
                added = {}
                for root_scale, walkers in ((1.0, 1), (1.25, 1), (1.0, crowd)):
                    path = Path(clips_dir) / "cmu_07_01.bvh"
                    if root_scale != 1.0:
                        path = sliding_copy(path, folder, root_scale)
                    costs = preview_rows(bpy, kind, root_scale, walk_scene(bpy, path, kind, walkers), repeats)
                    added.setdefault(walkers, costs[walkers][1])
                print(f"{'':>8} and {added[crowd] / max(added[1], 1e-9):.1f}x what one walker alone adds in its own "
                      f"scene (where plain playback costs a fraction of the crowd's per walker)")
    finally:
        foot_lock.unregister()


def preview_rows(bpy, kind, root_scale, walkers, repeats):
    """The table's rows for one scene: one walker previewing and, in a crowd, all of them."""
    counts = (1,) if len(walkers) == 1 else (1, len(walkers))
    costs = preview_costs(bpy, walkers, counts, repeats)
    start, edit = start_seconds(bpy, walkers, bpy.data.objects[kind])
    plain = costs[0][0]
    for count in counts:
        with_preview, added, handlers = costs[count]
        print(f"{kind:>8} {root_scale:>5.2f} {len(walkers):>8} {count:>11} {plain:>6.3f}ms {with_preview:>6.3f}ms "
              f"{added:>6.3f}ms {handlers:>7.3f}ms {with_preview / plain:>6.2f} {start:>6.2f}s {edit:>6.2f}s")
    print(f"{'':>8} one previewing walker adds {costs[1][1]:.3f} ms per frame (target <= 0.5 ms)")
    if len(counts) > 1:
        crowd = counts[-1]
        print(f"{'':>8} {crowd} previewing walkers add {costs[crowd][1] / max(costs[1][1], 1e-9):.1f}x what one "
              f"adds in the same scene, {costs[crowd][2] / max(costs[1][2], 1e-9):.1f}x inside the handlers "
              f"(target <= {crowd}x)")
    return costs


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
