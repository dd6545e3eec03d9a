"""The command line on BVH files (the numpy path), its flags, report and exit status.

The CLI runs as users run it, ``python -m foot_lock`` in a subprocess, with this
repository on PYTHONPATH as ``foot_lock``; parsing alone is tested in-process.
"""

import fnmatch
import importlib.util
import itertools
import json
import re
import tomllib
from types import SimpleNamespace

import numpy as np
import pytest
from cli_helpers import (
    ROOT,
    column_owners,
    contact_frames,
    header_bytes,
    run_python,
    toe_slide_on_reference,
)
from foot_lock.solvers import bvh


@pytest.fixture(scope="module")
def bvh_run(tmp_path_factory, pythonpath, sliding):
    out = tmp_path_factory.mktemp("bvh_run")
    result = run_python(
        ["-m", "foot_lock", "remove-sliding", sliding, "-o", out / "walk_fixed.bvh", "--report", out / "report.json"],
        cwd=out, pythonpath=pythonpath,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result, out / "walk_fixed.bvh", json.loads((out / "report.json").read_text())


def test_bvh_out_keeps_the_header_byte_for_byte(bvh_run, sliding):
    _, fixed, _ = bvh_run
    assert header_bytes(fixed) == header_bytes(sliding)


def test_bvh_out_changes_only_the_channels_of_the_solved_joints(bvh_run, sliding):
    _, fixed, _ = bvh_run
    before, after = bvh.read(sliding), bvh.read(fixed)
    assert after.tokens.shape == before.tokens.shape
    owners = column_owners(before)
    changed = {owners[column] for column in np.flatnonzero((after.tokens != before.tokens).any(axis=0))}
    rig = bvh.detect_rig(before)
    solved = {before.joints[j].name for leg in rig.legs for j in (leg.hip, leg.knee, leg.ankle, leg.toe)}
    solved.add(before.joints[rig.pelvis].name)
    assert "Hips" in changed and "LeftUpLeg" in changed
    assert changed <= solved  # every other channel's text is the input's


def test_bvh_out_no_longer_slides(bvh_run, sliding, walk):
    _, fixed, _ = bvh_run
    assert toe_slide_on_reference(sliding, walk) > 3.0
    assert toe_slide_on_reference(fixed, walk) <= 1.5


def test_takes_joined_in_one_bvh_are_fixed_each_as_alone(tmp_path, sliding):
    """The sliding walk twice in one file (its pelvis jumps back between the takes): labels
    and lock take by take, so each half comes out as the walk fixed alone."""
    from foot_lock.cli.bvh_files import fix_bvh
    from foot_lock.solvers.foot_lock import FootLockSettings

    text = sliding.read_text()
    frames = bvh.read(sliding).tokens.shape[0]
    header, rows = text.split("Frame Time:", 1)
    time_line, body = rows.split("\n", 1)
    joined = tmp_path / "joined.bvh"
    joined.write_text(header.replace(f"Frames: {frames}", f"Frames: {2 * frames}") + "Frame Time:" + time_line + "\n"
                      + body.rstrip("\n") + "\n" + body)
    for source, target in ((sliding, tmp_path / "alone_fixed.bvh"), (joined, tmp_path / "joined_fixed.bvh")):
        fix_bvh(source, target, FootLockSettings())
    alone = bvh.read(tmp_path / "alone_fixed.bvh").tokens.astype(float)
    both = bvh.read(tmp_path / "joined_fixed.bvh").tokens.astype(float)
    assert both.shape == (2 * frames, alone.shape[1])
    assert np.abs(both - np.concatenate([alone, alone])).max() < 2e-6  # the file's 6 decimals


def z_up_copy(source, target):
    """``source`` turned into a Z-up world (+90 degrees about X: every OFFSET, the root's
    position and every joint's rotation), as some exporters write BVH: the same motion."""
    from foot_lock.solvers import quaternion as quat

    parsed = bvh.read(source)
    skeleton, motion = bvh.to_motion(parsed)
    turn = quat.from_axis_angle(np.array([1.0, 0.0, 0.0]), np.radians(90.0))
    matrix = quat.to_matrix(turn)

    def turned_offset(match):
        return "OFFSET " + " ".join(f"{v:.6f}" for v in np.array(match.group(1).split(), dtype=float) @ matrix.T)

    parsed.header = re.sub(r"OFFSET ([^\r\n]+)", turned_offset, parsed.header)
    rotations = quat.multiply(quat.multiply(np.broadcast_to(turn, motion.rot.shape), motion.rot),
                              np.broadcast_to(quat.conjugate(turn), motion.rot.shape))
    turned = type(motion)(rotations, motion.pos @ matrix.T, motion.fps)
    bvh.write(target, parsed, turned, 1.0, range(len(parsed.joints)), np.flatnonzero(skeleton.parents < 0))
    return target


def test_a_z_up_bvh_is_fixed_standing_along_z(tmp_path, sliding):
    """BVH is Y-up, but some exporters write a Z-up world: the command line solves along the
    axis the legs stand along, says so, and fixes the file as it fixes the Y-up one (solved
    along Y, its heights read as travel and the labels miss stances)."""
    from foot_lock.cli.bvh_files import fix_bvh
    from foot_lock.solvers.foot_lock import FootLockSettings

    z_up = z_up_copy(sliding, tmp_path / "z_up.bvh")
    (as_y,), (as_z,) = (fix_bvh(source, tmp_path / f"{source.stem}_fixed.bvh", FootLockSettings())
                        for source in (sliding, z_up))
    assert as_z["warnings"] == as_y["warnings"] + ["the clip stands along +Z, not BVH's +Y: solved with +Z up"]
    assert as_z["contacts"] == as_y["contacts"]
    for state in ("before", "after"):
        for figure, value in as_y[state].items():
            assert as_z[state][figure] == pytest.approx(value, rel=1e-3, abs=1e-3), (state, figure)


@pytest.mark.parametrize("clip", ["cmu_07_01", "cmu_01_01", "cmu_03_02"])
def test_an_unnamed_z_up_bvh_finds_its_legs_standing_along_z(tmp_path, clips_dir, clip):
    """Joints without telling names are found by their shape, which needs the axis the rest
    pose stands along: BVH's Y, else Z. Read along Y, some Z-up rest poses still show legs:
    chains ending lowest along Y (their toes point down Y), a knee taken for the thigh and
    the toe for the foot. Only legs that stand along the axis they were found along count."""
    source = clips_dir / f"{clip}.bvh"
    text = z_up_copy(source, tmp_path / "z_up.bvh").read_text()
    for index, name in enumerate(re.findall(r"(?:ROOT|JOINT) (\S+)", text)):
        text = re.sub(rf"((?:ROOT|JOINT) ){re.escape(name)}(\s)", rf"\g<1>j{index}\g<2>", text)
    unnamed = tmp_path / "unnamed.bvh"
    unnamed.write_text(text)
    skeleton, motion, rig = bvh.load(unnamed)
    _, _, named_rig = bvh.load(source)
    assert [(leg.hip, leg.knee, leg.ankle, leg.toe, leg.toe_end) for leg in rig.legs] == [
        (leg.hip, leg.knee, leg.ankle, leg.toe, leg.toe_end) for leg in named_rig.legs]
    assert bvh.standing_up(skeleton, motion, rig) == (bvh.Z_UP, "+Z")


def test_a_clip_solved_along_another_axis_than_its_legs_is_told(tmp_path, sliding):
    """The solver core warns wherever the legs do not stand along the up it is given (a
    Z-up file imported as Y-up lies on its back): in Blender, in any pipeline."""
    from foot_lock.solvers.foot_lock import remove_foot_sliding

    skeleton, motion, rig = bvh.load(z_up_copy(sliding, tmp_path / "z_up.bvh"))
    lying = [w for w in remove_foot_sliding(skeleton, motion, rig, bvh.UP).warnings if "not up" in w]
    assert lying == ["the legs stand along +Z, not up (+Y): was the clip imported with the wrong axes? Contacts "
                     "are read along +Y, so they are wrong unless the character lies down or stands on its hands"]
    assert not [w for w in remove_foot_sliding(skeleton, motion, rig, bvh.Z_UP).warnings if "not up" in w]


def test_a_z_up_bvh_imported_as_blender_reads_bvh_is_told_lying(addon, tmp_path, sliding):
    from blender_scenes import import_clip
    from foot_lock.adapters import jobs

    obj = import_clip(addon, z_up_copy(sliding, tmp_path / "z_up.bvh"))
    warnings = jobs.remove_sliding(obj, addon.context.scene).result.warnings
    assert [w for w in warnings if w.startswith("the legs stand along -Y, not up (+Z)")]


def flattened(settings):
    """Nested settings (the solver's dataclasses as a report holds them) as one level."""
    flat = {}
    for name, value in settings.items():
        flat.update(flattened(value) if isinstance(value, dict) else {name: value})
    return flat


def test_report_holds_metrics_contacts_time_and_warnings(bvh_run):
    result, fixed, report = bvh_run
    assert report["summary"] == {"files": 1, "fixed": 1, "failed": []}
    settings = report["settings"]
    if importlib.util.find_spec("bpy") is None:  # no settings flags: the solver's own, nested
        settings = flattened(settings)
    assert settings["speed_threshold"] == 0.25 and settings["height_clamp"] is True
    (record,) = report["files"]
    assert record["ok"] and record["error"] is None and record["seconds"] > 0
    assert record["output"] == str(fixed)
    (clip,) = record["clips"]
    assert clip["frames"] == 317 and clip["frame_start"] == 1 and clip["fps"] == pytest.approx(120.0, rel=1e-4)
    assert clip["metres_per_unit"] == 0.056444 and "CMU" in clip["unit_source"]
    assert set(clip["contacts"]) == {"left", "right"}
    for leg in clip["contacts"].values():
        assert 50 < leg["frames"] < 317 and leg["frames"] == contact_frames(leg["ranges"])
        assert all(1 <= first <= last <= 317 for first, last in leg["ranges"])
        # The foot is on the ground from heel strike to toe-off: where its heel or its toe is.
        heel, toe, foot = (set(itertools.chain.from_iterable(range(first, last + 1) for first, last in leg[ranges]))
                           for ranges in ("heel_ranges", "toe_ranges", "ranges"))
        assert heel | toe == foot and heel - toe and toe - heel
    assert clip["before"].keys() == clip["after"].keys() >= {"toe_slide_cm_s", "skate_ratio", "pelvis_deviation_cm"}
    assert 0.0 < clip["foot_jitter_mm"] < 0.5  # clean optical capture: a fraction of a millimetre
    assert clip["before"]["toe_slide_cm_s"] > 10.0 and clip["after"]["toe_slide_cm_s"] < 1.0
    assert clip["warnings"] == [] and clip["seconds"] > 0
    assert {"contacts", "offline_solve", "leg_ik"} <= clip["solver_seconds"].keys()
    assert re.search(r"^ok .*walk_sliding\.bvh -> .*toe slide \d+\.\d -> 0\.\d\d cm/s", result.stdout, re.M)


def test_bvh_unit_scale_flag_sets_the_unit_of_the_figures(tmp_path, sliding, bvh_run):
    from foot_lock.cli import main

    report = tmp_path / "report.json"
    argv = ["remove-sliding", str(sliding), "-o", str(tmp_path / "out.bvh"), "--report", str(report)]
    assert main(argv + ["--bvh-unit-scale", "0.028222"]) == 0
    (clip,) = json.loads(report.read_text())["files"][0]["clips"]
    assert (clip["metres_per_unit"], clip["unit_source"]) == (0.028222, "--bvh-unit-scale")
    guessed = bvh_run[2]["files"][0]["clips"][0]
    assert clip["after"]["toe_slide_cm_s"] == pytest.approx(guessed["after"]["toe_slide_cm_s"] / 2, rel=0.05)


@pytest.mark.parametrize(("legs", "unit"), [(51.0, "cm"), (14.3, "CMU unit"), (33.0, "inch"), (0.9, "m"), (850.0, "mm")])
def test_the_bvh_unit_is_guessed_among_those_giving_a_person_s_legs(walk, legs, unit):
    """The walk's skeleton scaled to legs (thigh plus shin) of ``legs`` file units: a child in
    centimetres (51 cm) was read as inches, legs of 1.3 m, its figures 2.54 times too large."""
    from foot_lock.cli.bvh_files import COMMON_UNITS, unit_scale
    from foot_lock.solvers import bvh

    parsed = bvh.read(walk)
    rig = bvh.detect_rig(parsed)
    now = np.mean([np.linalg.norm(parsed.joints[leg.knee].offset) + np.linalg.norm(parsed.joints[leg.ankle].offset)
                   for leg in rig.legs])
    for joint in parsed.joints:
        joint.offset = joint.offset * (legs / now)
    assert unit_scale(parsed, rig) == (COMMON_UNITS[unit], f"guessed from leg length: {unit}")


def test_bvh_needs_no_bpy(tmp_path, pythonpath, sliding, bvh_run):
    """Without bpy a BVH is fixed all the same, with the panel's defaults."""
    code = (
        "import runpy, sys\n"
        "sys.modules['bpy'] = None  # as if the wheel were not installed\n"
        "sys.argv[0] = 'foot_lock'\n"
        "runpy.run_module('foot_lock', run_name='__main__', alter_sys=True)\n"
    )
    out = tmp_path / "walk_fixed.bvh"
    result = run_python(["-c", code, "remove-sliding", sliding, "-o", out], cwd=tmp_path, pythonpath=pythonpath)
    assert result.returncode == 0, result.stdout + result.stderr
    assert out.read_bytes() == bvh_run[1].read_bytes()
    result = run_python(["-c", code, "remove-sliding", "--help"], cwd=tmp_path, pythonpath=pythonpath)
    assert "--speed-threshold" not in result.stdout and "need the bpy wheel" in result.stdout


def test_a_failed_clip_exits_non_zero_and_is_reported(tmp_path, pythonpath):
    broken = tmp_path / "broken.bvh"
    broken.write_text("HIERARCHY\nROOT Hips\n{\n")
    result = run_python(
        ["-m", "foot_lock", "remove-sliding", broken, "-o", tmp_path / "out.bvh", "--report", tmp_path / "r.json"],
        cwd=tmp_path, pythonpath=pythonpath,
    )
    assert result.returncode == 1
    assert result.stdout.startswith(f"FAILED {broken}: not a BVH file")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"] == {"files": 1, "fixed": 0, "failed": [str(broken)]}
    assert not report["files"][0]["ok"] and "not a BVH file" in report["files"][0]["error"]
    assert not (tmp_path / "out.bvh").exists()


def test_a_bvh_is_written_only_from_a_bvh(tmp_path, capsys):
    from foot_lock.cli import main

    source = tmp_path / "walk.fbx"
    source.write_bytes(b"")
    assert main(["remove-sliding", str(source), "-o", str(tmp_path / "walk.bvh")]) == 1
    assert "a BVH is written only from a BVH" in capsys.readouterr().out


@pytest.mark.parametrize("clip, says", [
    ("missing.bvh", "cannot read {clip}: No such file or directory"),
    ("broken.bvh", "not a BVH file"),
    ("fox.glb", "give it a .bvh file"),
])
def test_the_demo_on_a_clip_it_cannot_read_says_so_in_one_line(tmp_path, capsys, clip, says):
    from foot_lock.cli import main

    path = tmp_path / clip
    if clip != "missing.bvh":
        path.write_text("HIERARCHY\n")
    assert main(["demo", "--clip", str(path), "--output-dir", str(tmp_path / "demo")]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"Foot Lock demo: FAILED {path}: ") and says.format(clip=path) in line


def test_the_blender_script_runs_the_command_line_without_install(tmp_path, sliding, bvh_run):
    """``blender -b --python cli/blender_script.py -- ...`` as far as the wheel can show it:
    the same file run by the wheel's Python, with no PYTHONPATH and from another folder."""
    out = tmp_path / "walk_fixed.bvh"
    result = run_python([ROOT / "cli" / "blender_script.py", "--", "remove-sliding", sliding, "-o", out], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert out.read_bytes() == bvh_run[1].read_bytes()


# --- flags ------------------------------------------------------------------------------


def test_every_panel_setting_the_job_uses_has_a_flag_with_the_panels_default(blender):
    """Flags exist for the bake's settings and for every setting that changes the solver's
    settings (found by changing each one), with the panel's defaults; the rest (the
    preview's, the rig's bones, UI state) have none."""
    import foot_lock
    from foot_lock.adapters.properties import FOOT_LOCK_PG_settings, solver_settings
    from foot_lock.cli.arguments import parse_args

    scalars = {name: prop for name, prop in FOOT_LOCK_PG_settings.__annotations__.items()
               if prop.function in (blender.props.BoolProperty, blender.props.FloatProperty, blender.props.IntProperty)}

    def changes_the_solver(name):
        other = not panel_defaults[name] if isinstance(panel_defaults[name], bool) else panel_defaults[name] + 0.01
        changed = SimpleNamespace(**{**panel_defaults, name: other})
        return solver_settings(changed) != solver_settings(SimpleNamespace(**panel_defaults))

    plain = ["remove-sliding", "in.bvh", "-o", "out.bvh"]
    defaults = parse_args(plain)
    assert defaults.explicit_settings == []
    foot_lock.register()
    try:
        panel = blender.data.objects.new("rig", blender.data.armatures.new("rig")).foot_lock
        panel_defaults = {name: getattr(panel, name) for name in scalars}
        for name, prop in scalars.items():
            if not hasattr(defaults, name):
                assert name not in ("in_place", "overwrite_contacts") and not changes_the_solver(name), name
                continue
            default = prop.keywords["default"]
            assert getattr(defaults, name) == default == pytest.approx(panel_defaults[name]), name
            flag = "--" + name.replace("_", "-")
            if isinstance(default, bool):
                given, argv = not default, [flag if not default else "--no-" + flag[2:]]
            else:
                given = prop.keywords.get("max", prop.keywords.get("soft_max"))
                argv = [flag, str(given)]
            args = parse_args(plain + argv)
            assert getattr(args, name) == pytest.approx(given) and args.explicit_settings == [name], name
    finally:
        foot_lock.unregister()
    from foot_lock.cli.settings_flags import panel_settings

    assert len(panel_settings()) >= 12


def test_out_of_range_values_are_refused(blender, capsys):
    from foot_lock.cli.arguments import parse_args

    with pytest.raises(SystemExit) as exit_info:
        parse_args(["remove-sliding", "in.bvh", "-o", "out.bvh", "--softening", "0.5"])
    assert exit_info.value.code == 2
    assert "--softening: 0.5 is outside 0 .. 0.2" in capsys.readouterr().err


# --- packaging and README ---------------------------------------------------------------


def test_pip_install_ships_the_cli_and_the_demo_clip():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "foot_lock.cli" in setuptools["packages"]
    patterns = setuptools["package-data"]["foot_lock.cli"]
    for shipped in ("data/cmu_07_01.bvh", "data/ATTRIBUTION.txt"):
        assert (ROOT / "cli" / shipped).is_file()
        assert any(fnmatch.fnmatch(shipped, pattern) for pattern in patterns), shipped


def test_bundled_clip_is_the_cmu_walk_unchanged_with_its_attribution(walk):
    assert (ROOT / "cli" / "data" / "cmu_07_01.bvh").read_bytes() == walk.read_bytes()
    credit = "The data used in this project was obtained from mocap.cs.cmu.edu."
    assert credit in (ROOT / "cli" / "data" / "ATTRIBUTION.txt").read_text()
    assert credit in (ROOT / "README.md").read_text()


def test_readme_documents_every_settings_flag(blender):
    from foot_lock.cli.settings_flags import panel_settings

    readme = (ROOT / "README.md").read_text()
    assert [s.flag for s in panel_settings() if f"`{s.flag}`" not in readme] == []
    # | Name | Panel | `--flag` | default with its unit | ...: the number, or on / off
    documented = dict(re.findall(r"\| `(--[a-z-]+)` \| ([^ |]+)", readme))
    actual = {s.flag: (("on" if s.default else "off") if s.kind is bool else f"{s.default:g}") for s in panel_settings()}
    assert {flag: documented[flag] for flag in actual} == actual


def test_readme_quick_start_is_two_commands_demo_then_tests():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    block = section.split("```", 2)[1]
    lines = [line for line in block.splitlines()[1:] if line.strip() and not line.startswith("#")]
    assert len(lines) == 2
    assert lines[0].endswith("-m foot_lock demo")
    assert lines[1].endswith("python -m pytest -q -rs")


@pytest.mark.parametrize("still", [False, True], ids=["one-frame", "no-motion"])
def test_a_bvh_pose_is_written_as_it_is_and_said_so(tmp_path, capsys, walk, still):
    """One frame, or frames that never change: a pose, not a motion. Kept as it is (as a
    .blend's pose is), not failed: a folder of clips and poses fixes through."""
    from foot_lock.cli import main

    header, motion = walk.read_text().split("MOTION", 1)
    lines = motion.strip().splitlines()
    rows = [lines[2]] * (5 if still else 1)
    pose = tmp_path / "pose.bvh"
    pose.write_text(f"{header}MOTION\nFrames: {len(rows)}\n{lines[1]}\n" + "\n".join(rows) + "\n")
    target = tmp_path / "out.bvh"
    assert main(["remove-sliding", str(pose), "-o", str(target)]) == 0
    said = "no motion over frames 1-5:" if still else "one frame (1): a pose,"  # as a .blend's are said
    assert f"{said} kept unchanged" in capsys.readouterr().out
    assert target.read_bytes() == pose.read_bytes()


# --- which Blender saved a .blend -------------------------------------------------------


@pytest.mark.parametrize(("header", "version"), [
    (b"BLENDER-v402REND", (4, 2)),  # 4.x and before: pointer size, endianness, three digits
    (b"BLENDER_V279REND", (2, 79)),
    (b"BLENDER17-01v0500REND", (5, 0)),  # 5.0 on: header size, format, four digits
    (b"not a blend file", None),
    (b"", None),
])
def test_a_blend_header_says_which_blender_saved_it(tmp_path, header, version):
    from foot_lock.cli.blend_header import saved_by

    path = tmp_path / "file.blend"
    path.write_bytes(header + bytes(64))
    assert saved_by(path) == version


def test_only_a_blend_from_a_newer_blender_gets_the_newer_message(tmp_path):
    from foot_lock.cli.blend_header import newer_than_this

    path = tmp_path / "walk.blend"
    path.write_bytes(b"BLENDER17-01v0500REND" + bytes(64))
    message = newer_than_this(path, (4, 2, 9))
    assert message.startswith("walk.blend was saved by Blender 5.0, newer than this Blender (4.2)")
    assert "bpy==5.0.*" in message
    assert newer_than_this(path, (5, 0, 1)) is None and newer_than_this(path, (5, 1, 0)) is None
